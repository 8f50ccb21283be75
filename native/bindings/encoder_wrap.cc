// Exposes svc::Encoder as the addon class `Encoder`. Arguments arrive as
// primitives and typed arrays; the output Float32Array is allocated by the caller
// and written in place (no copy back).
#include <napi.h>

#include <memory>
#include <string>
#include <vector>

#include "addon_data.h"
#include "errors.h"
#include "encoder/encoder.h"
#include "encoder/weights.h"

namespace svc_bindings {

namespace {

// new Adapter(configPath, adapterPath, rank, scale[, modules]): a LoRA adapter read once (held in
// its file's float type) and checked against the base's config and, with `modules` (a bit mask,
// see AdapterSpec), the modules adapter_config.json adapts, for Encoder.embed's segments. A batch
// holds its own reference while it runs, so dispose() never frees an adapter in use.
class AdapterWrap : public Napi::ObjectWrap<AdapterWrap> {
 public:
  static Napi::Function Define(Napi::Env env) {
    return DefineClass(
        env, "Adapter",
        {InstanceMethod<&AdapterWrap::Dispose>("dispose"), InstanceAccessor<&AdapterWrap::Bytes>("bytes")});
  }

  explicit AdapterWrap(const Napi::CallbackInfo& info) : Napi::ObjectWrap<AdapterWrap>(info) {
    Napi::Env env = info.Env();
    const bool with_modules = info.Length() == 5;
    if ((info.Length() != 4 && !with_modules) || !info[0].IsString() || !info[1].IsString() || !info[2].IsNumber() ||
        !info[3].IsNumber() || (with_modules && !info[4].IsNumber()))
      throw Napi::TypeError::New(env, "Adapter(configPath, adapterPath, rank, scale[, modules])");
    svc::AdapterSpec spec;
    spec.path = info[1].As<Napi::String>().Utf8Value();
    spec.rank = info[2].As<Napi::Number>().Int32Value();
    spec.scale = info[3].As<Napi::Number>().FloatValue();
    if (with_modules) spec.modules = info[4].As<Napi::Number>().Uint32Value();
    const std::string config = info[0].As<Napi::String>().Utf8Value();
    adapter_ = call_native(
        env, [&] { return std::make_shared<const svc::LoraAdapter>(spec, svc::read_encoder_config(config)); });
  }

  // The adapter, or a TypeError naming the segment when it was disposed.
  std::shared_ptr<const svc::LoraAdapter> held(Napi::Env env) const {
    if (!adapter_) throw disposed(env, "adapter");
    return adapter_;
  }

 private:
  Napi::Value Dispose(const Napi::CallbackInfo& info) {
    adapter_.reset();
    return info.Env().Undefined();
  }
  Napi::Value Bytes(const Napi::CallbackInfo& info) {
    return Napi::Number::New(info.Env(), static_cast<double>(held(info.Env())->bytes()));
  }

  std::shared_ptr<const svc::LoraAdapter> adapter_;
};

class EncoderWrap : public Napi::ObjectWrap<EncoderWrap> {
 public:
  static Napi::Function Define(Napi::Env env) {
    return DefineClass(
        env, "Encoder",
        {InstanceMethod<&EncoderWrap::Embed>("embed"), InstanceMethod<&EncoderWrap::HiddenStates>("hiddenStates"),
         InstanceMethod<&EncoderWrap::Dispose>("dispose"), InstanceMethod<&EncoderWrap::SetPooling>("setPooling"),
         InstanceAccessor<&EncoderWrap::Dim>("dim"), InstanceAccessor<&EncoderWrap::Threads>("threads"),
         InstanceAccessor<&EncoderWrap::WeightBytes>("weightBytes"),
         InstanceAccessor<&EncoderWrap::PrecisionInUse>("precision")});
  }

  // new Encoder(configPath: string, weightsPath: string, precision: 'fp32' | 'int8' | 'bf16', threads: number
  //             [, adapterPath: string, adapterRank: number, adapterScale: number])
  explicit EncoderWrap(const Napi::CallbackInfo& info) : Napi::ObjectWrap<EncoderWrap>(info) {
    Napi::Env env = info.Env();
    const bool with_adapter = info.Length() == 7;
    if ((info.Length() != 4 && !with_adapter) || !info[0].IsString() || !info[1].IsString() || !info[2].IsString() ||
        !info[3].IsNumber() || (with_adapter && (!info[4].IsString() || !info[5].IsNumber() || !info[6].IsNumber())))
      throw Napi::TypeError::New(
          env, "Encoder(configPath, weightsPath, precision, threads[, adapterPath, adapterRank, adapterScale])");
    const std::string precision = info[2].As<Napi::String>().Utf8Value();
    if (precision != "fp32" && precision != "int8" && precision != "bf16")
      throw Napi::TypeError::New(env, "precision must be 'fp32', 'int8' or 'bf16'");
    const int threads = info[3].As<Napi::Number>().Int32Value();
    const std::string config = info[0].As<Napi::String>().Utf8Value();
    const std::string weights_path = info[1].As<Napi::String>().Utf8Value();
    svc::AdapterSpec adapter;
    if (with_adapter) {
      adapter.path = info[4].As<Napi::String>().Utf8Value();
      adapter.rank = info[5].As<Napi::Number>().Int32Value();
      adapter.scale = info[6].As<Napi::Number>().FloatValue();
    }
    encoder_ = call_native(env, [&] {
      const svc::Precision p = precision == "int8"   ? svc::Precision::kInt8
                               : precision == "bf16" ? svc::Precision::kBf16
                                                     : svc::Precision::kF32;
      auto weights = svc::acquire_weights(config, weights_path, p, with_adapter ? &adapter : nullptr);
      return std::make_unique<svc::Encoder>(std::move(weights), threads);
    });
  }

 private:
  svc::Encoder& live(Napi::Env env) {
    if (!encoder_) throw disposed(env, "encoder");
    return *encoder_;
  }

  template <bool kPooled>
  Napi::Value Run(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    svc::Encoder& enc = live(env);
    auto ids32 = typed_array_arg<Napi::Int32Array>(info, 0, "ids");
    auto len32 = typed_array_arg<Napi::Int32Array>(info, 1, "lengths");
    auto outf = typed_array_arg<Napi::Float32Array>(info, 2, "out");
    const size_t rows = kPooled ? len32.ElementLength() : ids32.ElementLength();
    if (outf.ElementLength() != rows * static_cast<size_t>(enc.dim()))
      throw Napi::RangeError::New(env, "out has the wrong length");
    // Optional (counts: Int32Array, adapters: (Adapter | null)[]): runs of texts and their adapters.
    std::vector<svc::AdapterSegment> segments;
    if (info.Length() > 3 && !info[3].IsUndefined()) {
      auto counts = typed_array_arg<Napi::Int32Array>(info, 3, "counts");
      if (info.Length() <= 4 || !info[4].IsArray()) throw Napi::TypeError::New(env, "adapters must be an array");
      const Napi::Array adapters = info[4].As<Napi::Array>();
      if (adapters.Length() != counts.ElementLength())
        throw Napi::RangeError::New(env, "counts and adapters differ in length");
      const Napi::Function ctor = addon_data(env).adapter_constructor.Value();
      segments.resize(counts.ElementLength());
      for (uint32_t s = 0; s < adapters.Length(); ++s) {
        segments[s].texts = counts[s];
        const Napi::Value v = adapters.Get(s);
        if (v.IsNull() || v.IsUndefined()) continue;
        if (!v.IsObject() || !v.As<Napi::Object>().InstanceOf(ctor))
          throw Napi::TypeError::New(env, "adapters[" + std::to_string(s) + "] must be an Adapter or null");
        segments[s].adapter = AdapterWrap::Unwrap(v.As<Napi::Object>())->held(env);
      }
    }
    call_native(env, [&] {
      if (kPooled)
        enc.embed(ids32.Data(), ids32.ElementLength(), len32.Data(), len32.ElementLength(), outf.Data(), segments);
      else
        enc.hidden_states(ids32.Data(), ids32.ElementLength(), len32.Data(), len32.ElementLength(), outf.Data(),
                          segments);
    });
    return env.Undefined();
  }

  // setPooling(cls: boolean, normalize: boolean): how embed() pools from now on (default mean, normalized),
  // as the base model's 1_Pooling and Normalize modules say.
  Napi::Value SetPooling(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    if (info.Length() != 2 || !info[0].IsBoolean() || !info[1].IsBoolean())
      throw Napi::TypeError::New(env, "setPooling(cls: boolean, normalize: boolean)");
    live(env).set_pooling({info[0].As<Napi::Boolean>().Value(), info[1].As<Napi::Boolean>().Value()});
    return env.Undefined();
  }
  Napi::Value Embed(const Napi::CallbackInfo& info) { return Run<true>(info); }
  Napi::Value HiddenStates(const Napi::CallbackInfo& info) { return Run<false>(info); }
  Napi::Value Dispose(const Napi::CallbackInfo& info) {
    encoder_.reset();  // drops this instance's reference to the shared weights
    return info.Env().Undefined();
  }
  Napi::Value Dim(const Napi::CallbackInfo& info) { return Napi::Number::New(info.Env(), live(info.Env()).dim()); }
  Napi::Value Threads(const Napi::CallbackInfo& info) {
    return Napi::Number::New(info.Env(), live(info.Env()).threads());
  }
  Napi::Value WeightBytes(const Napi::CallbackInfo& info) {
    return Napi::Number::New(info.Env(), static_cast<double>(live(info.Env()).weights().bytes));
  }
  // The precision the weights were loaded in: "fp32" for a bf16 request on a CPU without AMX.
  Napi::Value PrecisionInUse(const Napi::CallbackInfo& info) {
    const svc::Precision p = live(info.Env()).weights().precision;
    return Napi::String::New(info.Env(), p == svc::Precision::kInt8   ? "int8"
                                         : p == svc::Precision::kBf16 ? "bf16"
                                                                      : "fp32");
  }

  std::unique_ptr<svc::Encoder> encoder_;
};

Napi::Value LoadedWeightSets(const Napi::CallbackInfo& info) {
  return Napi::Number::New(info.Env(), svc::loaded_weight_sets());
}

}  // namespace

void InitEncoder(Napi::Env env, Napi::Object exports) {
  exports.Set("Encoder", EncoderWrap::Define(env));
  Napi::Function adapter = AdapterWrap::Define(env);
  addon_data(env).adapter_constructor = Napi::Persistent(adapter);
  exports.Set("Adapter", adapter);
  exports.Set("loadedWeightSets", Napi::Function::New(env, LoadedWeightSets, "loadedWeightSets"));
}

}  // namespace svc_bindings
