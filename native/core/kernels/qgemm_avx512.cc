#include "kernels/qgemm.h"

namespace svc {
namespace detail {
QGemmKernel qgemm_kernel_avx512(bool) { return qgemm_kernel_scalar(); }
}  // namespace detail
}  // namespace svc
