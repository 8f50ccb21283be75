// Exports facts about the native build and the CPU it runs on.
#include <napi.h>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

#include "cpu_features.h"
#include "errors.h"
#include "kernels/autotune.h"
#include "kernels/gemm_bf16.h"

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
  // bf16 products: AVX512_BF16 (after SVC_ISA's cap), or emulated under SVC_KERNEL=bf16-emulated.
  out.Set("bf16", svc::train::bf16_products());
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

// measureKernels(threads, budgetMs): [{ name, gflops, relError, rounds }] for every linear-layer kernel this CPU
// allows (kernels/autotune.h). Blocks for about budgetMs.
Napi::Value MeasureKernels(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (info.Length() < 2 || !info[0].IsNumber() || !info[1].IsNumber())
    throw Napi::TypeError::New(env, "measureKernels(threads, budgetMs)");
  const int threads = info[0].As<Napi::Number>().Int32Value();
  const double budget = info[1].As<Napi::Number>().DoubleValue();
  const std::vector<svc::KernelMeasurement> rows =
      call_native(env, [&] { return svc::measure_linear_kernels(threads, budget); });
  Napi::Array out = Napi::Array::New(env, rows.size());
  for (std::size_t i = 0; i < rows.size(); ++i) {
    Napi::Object row = Napi::Object::New(env);
    row.Set("name", rows[i].name);
    row.Set("gflops", rows[i].gflops);
    row.Set("relError", rows[i].rel_error);
    row.Set("rounds", rows[i].rounds);
    out.Set(static_cast<uint32_t>(i), row);
  }
  return out;
}

// setBf16Kernel('amx' | 'vector' | 'emulated'): which bf16 kernel runs where the CPU has both (process-wide);
// 'emulated' runs bf16 products on any CPU (kernels/gemm_bf16.h).
Napi::Value SetBf16Kernel(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const std::string name = info.Length() > 0 && info[0].IsString() ? info[0].As<Napi::String>().Utf8Value() : "";
  if (name != "amx" && name != "vector" && name != "emulated")
    throw Napi::TypeError::New(env, "setBf16Kernel('amx' | 'vector' | 'emulated')");
  svc::set_bf16_kernel(name == "amx"      ? svc::Bf16Kernel::kAmx
                       : name == "vector" ? svc::Bf16Kernel::kVector
                                          : svc::Bf16Kernel::kEmulated);
  return env.Undefined();
}

}  // namespace

void InitSystem(Napi::Env env, Napi::Object exports) {
  exports.Set("cpuInfo", Napi::Function::New(env, CpuInfo, "cpuInfo"));
  exports.Set("mallocBytesInUse", Napi::Function::New(env, MallocBytesInUse, "mallocBytesInUse"));
  exports.Set("measureKernels", Napi::Function::New(env, MeasureKernels, "measureKernels"));
  exports.Set("setBf16Kernel", Napi::Function::New(env, SetBf16Kernel, "setBf16Kernel"));
  exports.Set("napiVersion", Napi::Number::New(env, NAPI_VERSION));
}

}  // namespace svc_bindings
