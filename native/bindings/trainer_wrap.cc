// Exposes svc::train::Trainer as the addon's `Trainer` class and the training
// core's gradient checks as `trainSelfTest()`. Arguments are unpacked here and
// nothing more: typed arrays are borrowed for the duration of the call.
#include <napi.h>

#include <algorithm>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "errors.h"
#include "train/gradcheck.h"
#include "train/trainer.h"

namespace svc_bindings {

namespace {

class TrainerWrap : public Napi::ObjectWrap<TrainerWrap> {
 public:
  static Napi::Function Define(Napi::Env env) {
    return DefineClass(
        env, "Trainer",
        {InstanceMethod<&TrainerWrap::Step>("step"), InstanceMethod<&TrainerWrap::Evaluate>("evaluate"),
         InstanceMethod<&TrainerWrap::Embed>("embed"), InstanceMethod<&TrainerWrap::Save>("save"),
         InstanceMethod<&TrainerWrap::Dispose>("dispose"),
         InstanceMethod<&TrainerWrap::AdapterTensors>("adapterTensors"),
         InstanceMethod<&TrainerWrap::StartHeadPhase>("startHeadPhase"),
         InstanceMethod<&TrainerWrap::HeadStep>("headStep"), InstanceMethod<&TrainerWrap::Head>("head"),
         InstanceAccessor<&TrainerWrap::StepsDone>("stepsDone"), InstanceAccessor<&TrainerWrap::Dim>("dim")});
  }

  // new Trainer(configFile, weightsFile, { dropout?, lr, beta1, beta2, eps, weightDecay, warmupRatio, totalSteps, seed,
  //   threads, maxGradNorm, trainEmbeddings, adapter?: { rank, alpha, targets: string[] }, bf16Products?,
  //   clsPooling?, normalize? })
  explicit TrainerWrap(const Napi::CallbackInfo& info) : Napi::ObjectWrap<TrainerWrap>(info) {
    if (info.Length() < 3 || !info[0].IsString() || !info[1].IsString() || !info[2].IsObject())
      throw Napi::TypeError::New(info.Env(), "Trainer(configFile, weightsFile, options)");
    const Napi::Object o = info[2].As<Napi::Object>();
    svc::train::TrainerOptions t;
    // Left out: the model's own hidden_dropout_prob.
    if (!o.Get("dropout").IsUndefined()) t.dropout = required_number(o, "dropout");
    t.adam.lr = required_number(o, "lr");
    t.adam.beta1 = required_number(o, "beta1");
    t.adam.beta2 = required_number(o, "beta2");
    t.adam.eps = required_number(o, "eps");
    t.adam.weight_decay = required_number(o, "weightDecay");
    t.adam.warmup_ratio = required_number(o, "warmupRatio");
    t.adam.total_steps = static_cast<int64_t>(required_number(o, "totalSteps"));
    t.seed = static_cast<uint64_t>(required_number(o, "seed"));
    t.threads = static_cast<int>(required_number(o, "threads"));
    t.max_grad_norm = required_number(o, "maxGradNorm");
    t.train_embeddings = required_number(o, "trainEmbeddings") != 0;
    if (!o.Get("adapter").IsUndefined()) t.adapter = adapter_config(o.Get("adapter"));
    // Left out: bf16 products wherever the CPU has them; 0 where they measured slower than fp32.
    if (!o.Get("bf16Products").IsUndefined()) t.bf16_products = required_number(o, "bf16Products") != 0;
    // Left out: mean pooling, normalized (svc-small's modules).
    if (!o.Get("clsPooling").IsUndefined()) t.cls_pooling = required_number(o, "clsPooling") != 0;
    if (!o.Get("normalize").IsUndefined()) t.normalize = required_number(o, "normalize") != 0;
    const std::string config = info[0].As<Napi::String>().Utf8Value();
    const std::string weights = info[1].As<Napi::String>().Utf8Value();
    trainer_ = call_native(info.Env(), [&] { return std::make_unique<svc::train::Trainer>(config, weights, t); });
  }

 private:
  // The core checks rank, alpha and that some target is set; here only the names.
  static svc::train::LoraConfig adapter_config(const Napi::Value& value) {
    const Napi::Env env = value.Env();
    if (!value.IsObject()) throw Napi::TypeError::New(env, "options.adapter must be an object");
    const Napi::Object a = value.As<Napi::Object>();
    svc::train::LoraConfig lc;
    lc.rank = static_cast<int>(required_number(a, "rank"));
    lc.alpha = required_number(a, "alpha");
    if (!a.Get("targets").IsArray()) throw Napi::TypeError::New(env, "options.adapter.targets must be an array");
    const Napi::Array targets = a.Get("targets").As<Napi::Array>();
    for (uint32_t i = 0; i < targets.Length(); ++i) {
      const Napi::Value name = targets.Get(i);
      const int index = name.IsString() ? svc::train::lora_target_index(name.As<Napi::String>().Utf8Value()) : -1;
      if (index < 0) throw Napi::RangeError::New(env, "options.adapter.targets holds an unknown layer name");
      lc.targets[index] = true;
    }
    return lc;
  }

  svc::train::Trainer& live(const Napi::CallbackInfo& info) {
    if (!trainer_) throw disposed(info.Env(), "trainer");
    return *trainer_;
  }

  Napi::Value Dispose(const Napi::CallbackInfo& info) {
    trainer_.reset();
    return info.Env().Undefined();
  }

  // Arguments 0 and 1: a packed batch of texts, the ids of all of them and each one's length.
  static std::pair<Napi::Int32Array, Napi::Int32Array> packed_texts(const Napi::CallbackInfo& info) {
    Napi::Int32Array ids = typed_array_arg<Napi::Int32Array>(info, 0, "ids");
    Napi::Int32Array lengths = typed_array_arg<Napi::Int32Array>(info, 1, "lengths");
    int64_t tokens = 0;
    for (size_t i = 0; i < lengths.ElementLength(); ++i) tokens += lengths[i];
    if (tokens != static_cast<int64_t>(ids.ElementLength()))
      throw Napi::RangeError::New(info.Env(), "lengths must add up to ids.length");
    return {ids, lengths};
  }

  svc::train::PairBatch batch(const Napi::CallbackInfo& info) {
    auto [ids, lengths] = packed_texts(info);
    Napi::Int32Array pa = typed_array_arg<Napi::Int32Array>(info, 2, "pairA");
    Napi::Int32Array pb = typed_array_arg<Napi::Int32Array>(info, 3, "pairB");
    Napi::Float32Array labels = typed_array_arg<Napi::Float32Array>(info, 4, "labels");
    if (pb.ElementLength() != pa.ElementLength() || labels.ElementLength() != pa.ElementLength())
      throw Napi::RangeError::New(info.Env(), "pairA, pairB and labels must have the same length");
    return {ids.Data(), lengths.Data(), static_cast<int>(lengths.ElementLength()), pa.Data(),
            pb.Data(),  labels.Data(),  static_cast<int>(pa.ElementLength())};
  }

  // What step() and headStep() hand back: [loss, lr, stepsDone, gradNorm].
  static Napi::Float64Array step_result(Napi::Env env, const svc::train::StepResult& r) {
    Napi::Float64Array out = Napi::Float64Array::New(env, 4);
    out[0] = r.loss;
    out[1] = r.lr;
    out[2] = static_cast<double>(r.step);
    out[3] = r.grad_norm;
    return out;
  }

  // step(ids, lengths, pairA, pairB, labels) -> Float64Array [loss, lr, stepsDone, gradNorm]
  Napi::Value Step(const Napi::CallbackInfo& info) {
    svc::train::Trainer& trainer = live(info);
    const svc::train::PairBatch b = batch(info);
    return step_result(info.Env(), call_native(info.Env(), [&] { return trainer.step(b); }));
  }

  // startHeadPhase(weights: Float32Array classes x dim, bias: Float32Array classes,
  //   { bodyLr, headLr, weightDecay, totalSteps })
  Napi::Value StartHeadPhase(const Napi::CallbackInfo& info) {
    svc::train::Trainer& trainer = live(info);
    Napi::Float32Array weights = typed_array_arg<Napi::Float32Array>(info, 0, "weights");
    Napi::Float32Array bias = typed_array_arg<Napi::Float32Array>(info, 1, "bias");
    if (info.Length() < 3 || !info[2].IsObject()) throw Napi::TypeError::New(info.Env(), "options must be an object");
    const Napi::Object o = info[2].As<Napi::Object>();
    svc::train::HeadPhaseOptions h;
    h.classes = static_cast<int>(bias.ElementLength());
    if (weights.ElementLength() != bias.ElementLength() * static_cast<size_t>(trainer.config().hidden))
      throw Napi::RangeError::New(info.Env(), "weights must hold bias.length x dim floats");
    h.body_lr = required_number(o, "bodyLr");
    h.head_lr = required_number(o, "headLr");
    h.weight_decay = required_number(o, "weightDecay");
    h.total_steps = static_cast<int64_t>(required_number(o, "totalSteps"));
    call_native(info.Env(), [&] { trainer.start_head_phase(h, weights.Data(), bias.Data()); });
    return info.Env().Undefined();
  }

  // headStep(ids, lengths, targets: Int32Array) -> Float64Array [loss, lr, stepsDone, gradNorm]
  Napi::Value HeadStep(const Napi::CallbackInfo& info) {
    svc::train::Trainer& trainer = live(info);
    auto [ids, lengths] = packed_texts(info);
    Napi::Int32Array targets = typed_array_arg<Napi::Int32Array>(info, 2, "targets");
    if (targets.ElementLength() != lengths.ElementLength())
      throw Napi::RangeError::New(info.Env(), "targets must have one class per text");
    return step_result(info.Env(), call_native(info.Env(), [&] {
                         return trainer.head_step(ids.Data(), lengths.Data(), static_cast<int>(lengths.ElementLength()),
                                                  targets.Data());
                       }));
  }

  // head() -> Float32Array: the end-to-end head's weights (classes x dim), then its biases (a copy).
  Napi::Value Head(const Napi::CallbackInfo& info) {
    const std::vector<float>& head = live(info).head();
    Napi::Float32Array out = Napi::Float32Array::New(info.Env(), head.size());
    std::copy(head.begin(), head.end(), out.Data());
    return out;
  }

  Napi::Value Evaluate(const Napi::CallbackInfo& info) {
    svc::train::Trainer& trainer = live(info);
    const svc::train::PairBatch b = batch(info);
    return Napi::Number::New(info.Env(), call_native(info.Env(), [&] { return trainer.evaluate(b); }));
  }

  // embed(ids, lengths, out: Float32Array of lengths.length x dim)
  Napi::Value Embed(const Napi::CallbackInfo& info) {
    svc::train::Trainer& trainer = live(info);
    auto [ids, lengths] = packed_texts(info);
    Napi::Float32Array out = typed_array_arg<Napi::Float32Array>(info, 2, "out");
    if (out.ElementLength() != lengths.ElementLength() * static_cast<size_t>(trainer.config().hidden))
      throw Napi::RangeError::New(info.Env(), "out must hold lengths.length x dim floats");
    call_native(info.Env(), [&] {
      trainer.embed(ids.Data(), lengths.Data(), static_cast<int>(lengths.ElementLength()), out.Data());
    });
    return info.Env().Undefined();
  }

  Napi::Value Save(const Napi::CallbackInfo& info) {
    svc::train::Trainer& trainer = live(info);
    if (info.Length() < 1 || !info[0].IsString()) throw Napi::TypeError::New(info.Env(), "path must be a string");
    const std::string path = info[0].As<Napi::String>().Utf8Value();
    call_native(info.Env(), [&] { trainer.save(path); });
    return info.Env().Undefined();
  }

  // adapterTensors() -> [{ name, shape: [rows, cols], data: Float32Array }], copies (a megabyte at most).
  Napi::Value AdapterTensors(const Napi::CallbackInfo& info) {
    const std::vector<svc::train::AdapterTensor> tensors = live(info).adapter_tensors();
    Napi::Array out = Napi::Array::New(info.Env(), tensors.size());
    for (size_t i = 0; i < tensors.size(); ++i) {
      const svc::train::AdapterTensor& t = tensors[i];
      Napi::Float32Array data = Napi::Float32Array::New(info.Env(), static_cast<size_t>(t.rows * t.cols));
      std::copy(t.data, t.data + t.rows * t.cols, data.Data());
      Napi::Array shape = Napi::Array::New(info.Env(), 2);
      shape.Set(0u, Napi::Number::New(info.Env(), static_cast<double>(t.rows)));
      shape.Set(1u, Napi::Number::New(info.Env(), static_cast<double>(t.cols)));
      Napi::Object entry = Napi::Object::New(info.Env());
      entry.Set("name", t.name);
      entry.Set("shape", shape);
      entry.Set("data", data);
      out.Set(static_cast<uint32_t>(i), entry);
    }
    return out;
  }

  Napi::Value StepsDone(const Napi::CallbackInfo& info) {
    return Napi::Number::New(info.Env(), static_cast<double>(live(info).steps_done()));
  }
  Napi::Value Dim(const Napi::CallbackInfo& info) { return Napi::Number::New(info.Env(), live(info).config().hidden); }

  std::unique_ptr<svc::train::Trainer> trainer_;
};

// trainSelfTest() -> { [check]: max relative error } for every gradient check.
Napi::Value TrainSelfTest(const Napi::CallbackInfo& info) {
  Napi::Object out = Napi::Object::New(info.Env());
  for (const svc::train::GradCheck& c : svc::train::run_gradient_checks()) out.Set(c.name, c.max_rel_error);
  return out;
}

}  // namespace

void InitTrainer(Napi::Env env, Napi::Object exports) {
  exports.Set("Trainer", TrainerWrap::Define(env));
  exports.Set("trainSelfTest", Napi::Function::New(env, TrainSelfTest, "trainSelfTest"));
}

}  // namespace svc_bindings
