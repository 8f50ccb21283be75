// The VectorOps loops compiled with avx512 flags (see vector_ops_impl.h).
// GCC 12 reports _mm512_undefined_*() inside its own intrinsic headers as uninitialized use.
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

#include "train/vector_ops_impl.h"

namespace svc::train::detail {
VectorOps vector_ops_avx512() { return make_vector_ops(); }
}  // namespace svc::train::detail
