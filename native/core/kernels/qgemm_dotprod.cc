// aarch64 int8 GEMM tile with SDOT (Armv8.2 dot-product extension); this file alone
// is built with +dotprod and is only called when the CPU reports it (HWCAP_ASIMDDP).
// See qgemm_neon_impl.h.
#include "kernels/qgemm_neon_impl.h"

namespace svc {
namespace detail {
QGemmKernel qgemm_kernel_neon_dotprod() { return {kNeonQMr, 127, qtile_neon<true>, quantize_block_portable}; }
}  // namespace detail
}  // namespace svc
