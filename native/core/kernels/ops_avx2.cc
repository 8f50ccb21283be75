// The OpsTable kernels compiled with avx2 flags (see ops_impl.h).
#include "kernels/ops_impl.h"

namespace svc {
namespace detail {
OpsTable ops_avx2(bool vnni) { return make_ops_table(vnni); }
}  // namespace detail
}  // namespace svc
