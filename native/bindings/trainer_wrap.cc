// Exposes svc::train::Trainer as the addon's `Trainer` class and the training
// core's gradient checks as `trainSelfTest()`. Arguments are unpacked here and
// nothing more: typed arrays are borrowed for the duration of the call.
#include <napi.h>

#include <memory>
#include <string>

#include "addon_data.h"
#include "train/gradcheck.h"
#include "train/trainer.h"

namespace svc_bindings {

namespace {

template <typename Array>
Array typed_arg(const Napi::CallbackInfo& info, size_t i, const char* name) {
  if (info.Length() <= i || !info[i].IsTypedArray()) throw Napi::TypeError::New(info.Env(), std::string(name) + " must be a typed array");
  Array a = info[i].As<Array>();
  return a;
}

double number_option(const Napi::Object& o, const char* key, double fallback) {
  const Napi::Value v = o.Get(key);
  return v.IsNumber() ? v.As<Napi::Number>().DoubleValue() : fallback;
}

class TrainerWrap : public Napi::ObjectWrap<TrainerWrap> {
 public:
  static Napi::Function Define(Napi::Env env) {
    return DefineClass(env, "Trainer",
                       {InstanceMethod<&TrainerWrap::Step>("step"), InstanceMethod<&TrainerWrap::Evaluate>("evaluate"),
                        InstanceMethod<&TrainerWrap::Embed>("embed"), InstanceMethod<&TrainerWrap::Save>("save"),
                        InstanceMethod<&TrainerWrap::Dispose>("dispose"),
                        InstanceAccessor<&TrainerWrap::StepsDone>("stepsDone"),
                        InstanceAccessor<&TrainerWrap::Dim>("dim")});
  }

  // new Trainer(weightsFile, { heads, lnEps, dropout, lr, beta1, beta2, eps, weightDecay, warmupRatio, totalSteps, seed, threads, maxGradNorm, trainEmbeddings })
  explicit TrainerWrap(const Napi::CallbackInfo& info) : Napi::ObjectWrap<TrainerWrap>(info) {
    if (info.Length() < 2 || !info[0].IsString() || !info[1].IsObject())
      throw Napi::TypeError::New(info.Env(), "Trainer(weightsFile, options)");
    const Napi::Object o = info[1].As<Napi::Object>();
    svc::train::TrainerOptions t;
    t.heads = static_cast<int>(number_option(o, "heads", t.heads));
    t.ln_eps = number_option(o, "lnEps", t.ln_eps);
    t.dropout = number_option(o, "dropout", t.dropout);
    t.adam.lr = number_option(o, "lr", t.adam.lr);
    t.adam.beta1 = number_option(o, "beta1", t.adam.beta1);
    t.adam.beta2 = number_option(o, "beta2", t.adam.beta2);
    t.adam.eps = number_option(o, "eps", t.adam.eps);
    t.adam.weight_decay = number_option(o, "weightDecay", t.adam.weight_decay);
    t.adam.warmup_ratio = number_option(o, "warmupRatio", t.adam.warmup_ratio);
    t.adam.total_steps = static_cast<int64_t>(number_option(o, "totalSteps", 1));
    t.seed = static_cast<uint64_t>(number_option(o, "seed", 42));
    t.threads = static_cast<int>(number_option(o, "threads", 1));
    t.max_grad_norm = number_option(o, "maxGradNorm", t.max_grad_norm);
    t.train_embeddings = number_option(o, "trainEmbeddings", 0) != 0;
    try {
      trainer_ = std::make_unique<svc::train::Trainer>(info[0].As<Napi::String>().Utf8Value(), t);
    } catch (const std::exception& e) {
      throw Napi::Error::New(info.Env(), e.what());
    }
  }

 private:
  svc::train::Trainer& live(const Napi::CallbackInfo& info) {
    if (!trainer_) throw Napi::Error::New(info.Env(), "the trainer is disposed");
    return *trainer_;
  }

  Napi::Value Dispose(const Napi::CallbackInfo& info) {
    trainer_.reset();
    return info.Env().Undefined();
  }

  svc::train::PairBatch batch(const Napi::CallbackInfo& info) {
    Napi::Int32Array ids = typed_arg<Napi::Int32Array>(info, 0, "ids");
    Napi::Int32Array lengths = typed_arg<Napi::Int32Array>(info, 1, "lengths");
    Napi::Int32Array pa = typed_arg<Napi::Int32Array>(info, 2, "pairA");
    Napi::Int32Array pb = typed_arg<Napi::Int32Array>(info, 3, "pairB");
    Napi::Float32Array labels = typed_arg<Napi::Float32Array>(info, 4, "labels");
    int64_t tokens = 0;
    for (size_t i = 0; i < lengths.ElementLength(); ++i) tokens += lengths[i];
    if (tokens != static_cast<int64_t>(ids.ElementLength()))
      throw Napi::RangeError::New(info.Env(), "lengths must add up to ids.length");
    if (pb.ElementLength() != pa.ElementLength() || labels.ElementLength() != pa.ElementLength())
      throw Napi::RangeError::New(info.Env(), "pairA, pairB and labels must have the same length");
    return {ids.Data(), lengths.Data(), static_cast<int>(lengths.ElementLength()), pa.Data(), pb.Data(),
            labels.Data(), static_cast<int>(pa.ElementLength())};
  }

  // step(ids, lengths, pairA, pairB, labels) -> Float64Array [loss, lr, stepsDone, gradNorm]
  Napi::Value Step(const Napi::CallbackInfo& info) {
    svc::train::Trainer& trainer = live(info);
    const svc::train::PairBatch b = batch(info);
    svc::train::StepResult r;
    try {
      r = trainer.step(b);
    } catch (const std::exception& e) {
      throw Napi::Error::New(info.Env(), e.what());
    }
    Napi::Float64Array out = Napi::Float64Array::New(info.Env(), 4);
    out[0] = r.loss;
    out[1] = r.lr;
    out[2] = static_cast<double>(r.step);
    out[3] = r.grad_norm;
    return out;
  }

  Napi::Value Evaluate(const Napi::CallbackInfo& info) {
    svc::train::Trainer& trainer = live(info);
    const svc::train::PairBatch b = batch(info);
    try {
      return Napi::Number::New(info.Env(), trainer.evaluate(b));
    } catch (const std::exception& e) {
      throw Napi::Error::New(info.Env(), e.what());
    }
  }

  // embed(ids, lengths, out: Float32Array of lengths.length x dim)
  Napi::Value Embed(const Napi::CallbackInfo& info) {
    svc::train::Trainer& trainer = live(info);
    Napi::Int32Array ids = typed_arg<Napi::Int32Array>(info, 0, "ids");
    Napi::Int32Array lengths = typed_arg<Napi::Int32Array>(info, 1, "lengths");
    Napi::Float32Array out = typed_arg<Napi::Float32Array>(info, 2, "out");
    int64_t tokens = 0;
    for (size_t i = 0; i < lengths.ElementLength(); ++i) tokens += lengths[i];
    if (tokens != static_cast<int64_t>(ids.ElementLength()))
      throw Napi::RangeError::New(info.Env(), "lengths must add up to ids.length");
    if (out.ElementLength() != lengths.ElementLength() * static_cast<size_t>(trainer.config().hidden))
      throw Napi::RangeError::New(info.Env(), "out must hold lengths.length x dim floats");
    try {
      trainer.embed(ids.Data(), lengths.Data(), static_cast<int>(lengths.ElementLength()), out.Data());
    } catch (const std::exception& e) {
      throw Napi::Error::New(info.Env(), e.what());
    }
    return info.Env().Undefined();
  }

  Napi::Value Save(const Napi::CallbackInfo& info) {
    svc::train::Trainer& trainer = live(info);
    if (info.Length() < 1 || !info[0].IsString()) throw Napi::TypeError::New(info.Env(), "path must be a string");
    try {
      trainer.save(info[0].As<Napi::String>().Utf8Value());
    } catch (const std::exception& e) {
      throw Napi::Error::New(info.Env(), e.what());
    }
    return info.Env().Undefined();
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
  Napi::Function ctor = TrainerWrap::Define(env);
  addon_data(env).constructors["Trainer"] = Napi::Persistent(ctor);
  exports.Set("Trainer", ctor);
  exports.Set("trainSelfTest", Napi::Function::New(env, TrainSelfTest, "trainSelfTest"));
}

}  // namespace svc_bindings
