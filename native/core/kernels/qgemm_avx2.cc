// Placeholder dispatch: the AVX2 int8 tile reuses the portable one until its own lands.
#include "kernels/qgemm.h"

namespace svc {
namespace detail {
QGemmKernel qgemm_kernel_avx2() { return qgemm_kernel_scalar(); }
}  // namespace detail
}  // namespace svc
