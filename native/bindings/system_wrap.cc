// Exports facts about the native build and the CPU it runs on.
#include <napi.h>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

#include "cpu_features.h"

namespace svc_bindings {

namespace {

Napi::Value CpuInfo(const Napi::CallbackInfo& info) {
  const svc::CpuFeatures& f = svc::cpu_features();
  Napi::Object out = Napi::Object::New(info.Env());
  out.Set("level", svc::cpu_level_name());
  out.Set("avx2", f.avx2);
  out.Set("avxvnni", f.avxvnni);
  out.Set("avx512", f.avx512);
  out.Set("avx512vnni", f.avx512vnni);
  out.Set("bf16", f.avx512bf16);
  out.Set("amx", f.amx);
  out.Set("neon", f.neon);
  out.Set("neonDotprod", f.neon_dotprod);
  return out;
}

// Bytes the C allocator has handed out and not had back, across all its arenas: the engine's
// buffers and every ArrayBuffer's backing store. Resident set size moves with V8's heap and with
// pages the allocator keeps or returns, so a leak check reads this instead. Null where the C
// library cannot tell (mallinfo2 is glibc 2.33 and later).
Napi::Value MallocBytesInUse(const Napi::CallbackInfo& info) {
#if defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 33))
  const struct mallinfo2 m = mallinfo2();
  return Napi::Number::New(info.Env(), static_cast<double>(m.uordblks + m.hblkhd));
#else
  return info.Env().Null();
#endif
}

}  // namespace

void InitSystem(Napi::Env env, Napi::Object exports) {
  exports.Set("cpuInfo", Napi::Function::New(env, CpuInfo, "cpuInfo"));
  exports.Set("mallocBytesInUse", Napi::Function::New(env, MallocBytesInUse, "mallocBytesInUse"));
  exports.Set("napiVersion", Napi::Number::New(env, NAPI_VERSION));
}

}  // namespace svc_bindings
