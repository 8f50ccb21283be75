#include "kernels/ops.h"

#include "cpu_features.h"
#include "kernels/ops_impl.h"

namespace svc {

namespace detail {
OpsTable ops_scalar() { return make_ops_table(); }
}  // namespace detail

const OpsTable& ops() {
  static const OpsTable table = [] {
    [[maybe_unused]] const CpuFeatures& f = cpu_features();
#if SVC_ARCH_X86
    if (f.avx512) return detail::ops_avx512();
    if (f.avx2) return detail::ops_avx2();
#endif
    // On aarch64 the portable build of these loops is already NEON code (Advanced SIMD is baseline).
    return detail::ops_scalar();
  }();
  return table;
}

}  // namespace svc
