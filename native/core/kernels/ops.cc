#include "kernels/ops.h"

#include "cpu_features.h"
#include "kernels/ops_impl.h"

namespace svc {

namespace detail {
OpsTable ops_scalar() { return make_ops_table(); }
}  // namespace detail

const OpsTable& ops() {
  static const OpsTable table = [] {
    const CpuFeatures& f = cpu_features();
    if (f.avx512) return detail::ops_avx512();
    if (f.avx2) return detail::ops_avx2();
    return detail::ops_scalar();
  }();
  return table;
}

}  // namespace svc
