// Exports facts about the native build and the CPU it runs on.
#include <napi.h>

#include "cpu_features.h"

namespace svc_bindings {

namespace {

Napi::Value CpuInfo(const Napi::CallbackInfo& info) {
  const svc::CpuFeatures& f = svc::cpu_features();
  Napi::Object out = Napi::Object::New(info.Env());
  out.Set("level", svc::cpu_level_name());
  out.Set("avx2", f.avx2);
  out.Set("avx512", f.avx512);
  out.Set("avx512vnni", f.avx512vnni);
  return out;
}

}  // namespace

void InitSystem(Napi::Env env, Napi::Object exports) {
  exports.Set("cpuInfo", Napi::Function::New(env, CpuInfo, "cpuInfo"));
  exports.Set("napiVersion", Napi::Number::New(env, NAPI_VERSION));
}

}  // namespace svc_bindings
