// The OpsTable kernels compiled with avx512 flags (see ops_impl.h).
// GCC 12 reports _mm512_undefined_*() inside its own intrinsic headers as uninitialized use.
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

#include "kernels/ops_impl.h"

namespace svc {
namespace detail {
OpsTable ops_avx512(bool vnni) { return make_ops_table(vnni); }
}  // namespace detail
}  // namespace svc
