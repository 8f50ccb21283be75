#include "train/vector_ops.h"

#include "cpu_features.h"
#include "train/vector_ops_impl.h"

namespace svc::train {

namespace detail {
VectorOps vector_ops_scalar() { return make_vector_ops(); }
}  // namespace detail

const VectorOps& vector_ops() {
  static const VectorOps table = [] {
    [[maybe_unused]] const CpuLevel level = cpu_level();
#if SVC_ARCH_X86
    if (level >= CpuLevel::kAvx512) return detail::vector_ops_avx512();
    if (level >= CpuLevel::kAvx2) return detail::vector_ops_avx2();
#endif
    return detail::vector_ops_scalar();
  }();
  return table;
}

}  // namespace svc::train
