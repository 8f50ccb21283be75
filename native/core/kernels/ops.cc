#include "kernels/ops.h"

#include "cpu_features.h"
#include "kernels/ops_impl.h"

namespace svc {

namespace detail {
OpsTable ops_scalar() { return make_ops_table(false); }
void attention_head_s8_reference(const float* q, const float* k, const float* v, int64_t ld, int len, int dh,
                                 float scale, const float* position_bias, float* out, int64_t ldo, float* scratch) {
  attention_head_s8_reference_impl(q, k, v, ld, len, dh, scale, position_bias, out, ldo, scratch);
}
}  // namespace detail

const OpsTable& ops() {
  static const OpsTable table = [] {
    [[maybe_unused]] const CpuLevel level = cpu_level();
#if SVC_ARCH_X86
    if (level >= CpuLevel::kAvx512) return detail::ops_avx512(level >= CpuLevel::kAvx512Vnni);
    if (level >= CpuLevel::kAvx2) return detail::ops_avx2(level == CpuLevel::kAvx2Vnni);
#endif
    // On aarch64 the portable build of these loops is already NEON code (Advanced SIMD is baseline).
    return detail::ops_scalar();
  }();
  return table;
}

}  // namespace svc
