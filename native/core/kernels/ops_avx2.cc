// The OpsTable kernels compiled with avx2 flags (see ops_impl.h).
#include "kernels/ops_impl.h"

namespace svc {
namespace detail {
OpsTable ops_avx2() { return make_ops_table(); }
}  // namespace detail
}  // namespace svc
