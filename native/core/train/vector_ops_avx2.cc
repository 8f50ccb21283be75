// The VectorOps loops compiled with avx2 flags (see vector_ops_impl.h).
#include "train/vector_ops_impl.h"

namespace svc::train::detail {
VectorOps vector_ops_avx2() { return make_vector_ops(); }
}  // namespace svc::train::detail
