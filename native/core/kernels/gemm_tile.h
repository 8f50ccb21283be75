// Shared tail of every GEMM tile, compiled into each ISA's translation unit so it
// vectorizes with that ISA: add the residual, then apply the epilogue, while the
// tile is still in L1.
#pragma once

#include "kernels/gemm.h"
#include "kernels/vec_math.h"

namespace svc {
namespace detail {
// Internal linkage: every ISA translation unit keeps its own copy (the linker
// must not merge an AVX-512 body into the scalar path).
namespace {

inline void finish_tile(float* c, int64_t ldc, int rows, int cols, const float* residual, Epilogue epilogue) {
  for (int r = 0; r < rows; ++r) {
    float* out = c + r * ldc;
    if (residual) {
      const float* res = residual + r * ldc;
      for (int j = 0; j < cols; ++j) out[j] += res[j];
    }
    if (epilogue == Epilogue::kGelu)
      vec::gelu_inplace(out, cols);
    else if (epilogue == Epilogue::kGeluCoarse)
      vec::gelu_coarse_inplace(out, cols);
  }
}

}  // namespace
}  // namespace detail
}  // namespace svc
