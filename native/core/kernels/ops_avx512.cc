// The OpsTable kernels compiled with avx512 flags (see ops_impl.h).
#include "kernels/ops_impl.h"

namespace svc {
namespace detail {
OpsTable ops_avx512() { return make_ops_table(); }
}  // namespace detail
}  // namespace svc
