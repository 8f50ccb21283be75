// Shared tail of every GEMM tile, compiled into each ISA's translation unit so it
// vectorizes with that ISA: add the residual, then apply the epilogue, while the
// tile is still in L1.
#pragma once

#include <array>
#include <type_traits>
#include <utility>

#include "kernels/gemm.h"
#include "kernels/vec_math.h"

namespace svc {
namespace detail {
// Internal linkage: every ISA translation unit keeps its own copy (the linker
// must not merge an AVX-512 body into the scalar path).
namespace {

template <typename Pick, int... R>
constexpr auto row_tiles_of(Pick pick, std::integer_sequence<int, R...>) {
  return std::array{pick(std::integral_constant<int, R + 1>{})...};
}

// A tile kernel per row count, unrolled at compile time: `row_tiles<kMr>(pick)[rows - 1]` is the kernel `pick`
// returns for std::integral_constant<int, rows>. Each ISA's file fills the table from its own tile template.
template <int kRows, typename Pick>
constexpr auto row_tiles(Pick pick) {
  return row_tiles_of(pick, std::make_integer_sequence<int, kRows>{});
}

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
