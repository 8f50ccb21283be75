// aarch64 int8 GEMM tile without the dot-product extension (widening multiplies);
// built for aarch64 only. See qgemm_neon_impl.h.
#include "kernels/qgemm_neon_impl.h"

namespace svc {
namespace detail {
QGemmKernel qgemm_kernel_neon() { return {kNeonQMr, 127, qtile_neon<false>, quantize_block_portable}; }
}  // namespace detail
}  // namespace svc
