// Forward and backward kernels of the encoder's pieces, templated on the scalar
// so the same code runs in fp32 for training and in double for gradient checks.
// Row-major; rows are packed tokens. Backward functions overwrite weight-matrix
// gradients (each matrix is used once per pass), accumulate into bias and
// LayerNorm gradients, and overwrite activation gradients unless told otherwise.
#pragma once

#include <cmath>
#include <cstdint>
#include <type_traits>

#include "kernels/gemm_bf16.h"
#include "train/linalg.h"
#include "train/lora_kernels.h"
#include "train/rng.h"
#include "train/vector_ops.h"
#include "workers.h"

namespace svc::train {

// Weight matrices packed once per step for every text group: `forward` as op(B)
// of y = x·Wᵀ, `backward` as op(B) of dx = dy·W. Null: pack inside each product.
// The bf16 panels, when set, take their place and make the layer's products bf16
// (gemm_bf16.h), dW = dyᵀ·x included.
struct PackedWeight {
  const PackedF32* forward = nullptr;
  const PackedF32* backward = nullptr;
  const PackedBf16* forward_bf16 = nullptr;
  const PackedBf16* backward_bf16 = nullptr;
};

// y[rows x out] = x[rows x in] · Wᵀ + b, with W in the [out x in] layout of the checkpoint.
template <typename T>
void linear_forward(int rows, int in, int out, const T* x, const T* w, const T* b, T* y, Workers* workers,
                    PackedWeight packed = {}) {
  if constexpr (std::is_same_v<T, float>) {
    if (packed.forward_bf16)
      gemm_bf16(false, rows, x, in, *packed.forward_bf16, 0.f, y, out, workers);
    else if (packed.forward)
      gemm_prepacked(false, rows, x, in, *packed.forward, 0.f, y, out, workers);
    else
      gemm<T>(false, true, rows, out, in, x, in, w, in, T(0), y, out, workers);
  } else {
    gemm<T>(false, true, rows, out, in, x, in, w, in, T(0), y, out, workers);
  }
  for (int64_t r = 0; r < rows; ++r)
    for (int j = 0; j < out; ++j) y[r * out + j] += b[j];
}

// dx = dx_beta*dx + dy·W (skipped when dx is null), dW = dyᵀ·x, db += column sums of dy.
// A frozen layer (adapter training) passes dw and db null: only dx.
template <typename T>
void linear_backward(int rows, int in, int out, const T* x, const T* w, const T* dy, T* dx, T dx_beta, T* dw, T* db,
                     Workers* workers, PackedWeight packed = {}) {
  if (dx) {
    if constexpr (std::is_same_v<T, float>) {
      if (packed.backward_bf16)
        gemm_bf16(false, rows, dy, out, *packed.backward_bf16, dx_beta, dx, in, workers);
      else if (packed.backward)
        gemm_prepacked(false, rows, dy, out, *packed.backward, dx_beta, dx, in, workers);
      else
        gemm<T>(false, false, rows, in, out, dy, out, w, in, dx_beta, dx, in, workers);
    } else {
      gemm<T>(false, false, rows, in, out, dy, out, w, in, dx_beta, dx, in, workers);
    }
  }
  if (!dw) return;
  bool dw_done = false;
  if constexpr (std::is_same_v<T, float>) {
    if (packed.backward_bf16) {
      thread_local PackedBf16 x_panels;  // per thread: each text group runs its backward on its own
      pack_b_bf16(false, x, in, rows, in, x_panels, workers);
      gemm_bf16(true, out, dy, out, x_panels, 0.f, dw, in, workers);
      dw_done = true;
    }
  }
  if (!dw_done) gemm<T>(true, false, out, in, rows, dy, out, x, in, T(0), dw, in, workers);
  for (int64_t r = 0; r < rows; ++r)
    for (int j = 0; j < out; ++j) db[j] += dy[r * out + j];
}

// y = g * (x - mean) / sqrt(var + eps) + b per row; keeps x̂ and 1/σ for backward.
template <typename T>
void layer_norm_forward(int rows, int cols, const T* x, const T* g, const T* b, double eps, T* y, T* xhat, T* rstd) {
  for (int64_t r = 0; r < rows; ++r) {
    const T* xr = x + r * cols;
    T mean = 0;
    for (int j = 0; j < cols; ++j) mean += xr[j];
    mean /= cols;
    T var = 0;
    for (int j = 0; j < cols; ++j) var += (xr[j] - mean) * (xr[j] - mean);
    var /= cols;
    const T rs = T(1) / std::sqrt(var + T(eps));
    rstd[r] = rs;
    for (int j = 0; j < cols; ++j) {
      const T h = (xr[j] - mean) * rs;
      if (xhat) xhat[r * cols + j] = h;
      y[r * cols + j] = g[j] * h + b[j];
    }
  }
}

// y = g·x̂ + b per row: a LayerNorm's output again from its kept x̂, the same expression
// layer_norm_forward evaluates, so the same bits (backward recomputes layer inputs this way).
template <typename T>
void layer_norm_affine(int rows, int cols, const T* xhat, const T* g, const T* b, T* y) {
  for (int64_t r = 0; r < rows; ++r)
    for (int j = 0; j < cols; ++j) {
      const T h = xhat[r * cols + j];
      y[r * cols + j] = g[j] * h + b[j];
    }
}

// dx = (1/σ)(dx̂ - mean(dx̂) - x̂·mean(dx̂·x̂)) with dx̂ = dy·g; dg += Σ dy·x̂, db += Σ dy
// (skipped when dg is null: a frozen LayerNorm).
template <typename T>
void layer_norm_backward(int rows, int cols, const T* dy, const T* xhat, const T* rstd, const T* g, T* dx, T* dg,
                         T* db) {
  for (int64_t r = 0; r < rows; ++r) {
    const T* dyr = dy + r * cols;
    const T* hr = xhat + r * cols;
    T mean_d = 0, mean_dh = 0;
    for (int j = 0; j < cols; ++j) {
      const T d = dyr[j] * g[j];
      mean_d += d;
      mean_dh += d * hr[j];
    }
    if (dg)
      for (int j = 0; j < cols; ++j) {
        dg[j] += dyr[j] * hr[j];
        db[j] += dyr[j];
      }
    mean_d /= cols;
    mean_dh /= cols;
    for (int j = 0; j < cols; ++j) dx[r * cols + j] = rstd[r] * (dyr[j] * g[j] - mean_d - hr[j] * mean_dh);
  }
}

// GELU with erf, as BERT's "gelu": 0.5·x·(1 + erf(x/√2)) = x·Φ(x). Keeps Φ(x)
// (when cdf is not null) so backward needs no second erf.
template <typename T>
void gelu_forward(int64_t n, const T* x, T* y, T* cdf, Workers* workers) {
  parallel_for_grain(n < 65536 ? nullptr : workers, n, 4096, [&](int64_t i0, int64_t i1) {
    if constexpr (std::is_same_v<T, float>) {
      vector_ops().gelu_forward(i1 - i0, x + i0, y + i0, cdf + i0);
      return;
    }
    for (int64_t i = i0; i < i1; ++i) {
      const T phi = T(0.5) * (T(1) + std::erf(x[i] * T(0.70710678118654752440)));
      if (cdf) cdf[i] = phi;
      y[i] = x[i] * phi;
    }
  });
}

// dx = dy · (Φ(x) + x·φ(x)).
template <typename T>
void gelu_backward(int64_t n, const T* x, const T* cdf, const T* dy, T* dx, Workers* workers) {
  parallel_for_grain(n < 65536 ? nullptr : workers, n, 4096, [&](int64_t i0, int64_t i1) {
    if constexpr (std::is_same_v<T, float>) {
      vector_ops().gelu_backward(i1 - i0, x + i0, cdf + i0, dy + i0, dx + i0);
      return;
    }
    for (int64_t i = i0; i < i1; ++i) {
      const T pdf = std::exp(T(-0.5) * x[i] * x[i]) * T(0.39894228040143267794);
      dx[i] = dy[i] * (cdf[i] + x[i] * pdf);
    }
  });
}

// Inverted dropout in place over [rows x cols] starting at global row `row0`:
// the same call applies the mask forward and to the gradient backward.
template <typename T>
void dropout_apply(const DropoutStream& s, double p, int64_t row0, int64_t rows, int cols, T* x) {
  if (!s.active) return;
  const T scale = T(1) / T(1 - p);
  if constexpr (std::is_same_v<T, float>) {
    vector_ops().dropout(s.key, s.threshold, scale, static_cast<uint64_t>(row0) * cols, rows * cols, x);
    return;
  }
  for (int64_t r = 0; r < rows; ++r)
    for (int j = 0; j < cols; ++j) {
      const uint64_t index = static_cast<uint64_t>(row0 + r) * static_cast<uint64_t>(cols) + j;
      x[r * cols + j] = s.keep(index) ? x[r * cols + j] * scale : T(0);
    }
}

// Mean of each text's token rows: pooled[t] = (1/n_t) Σ x[row].
template <typename T>
void mean_pool_forward(int texts, const int32_t* offsets, const int32_t* lengths, int cols, const T* x, T* pooled) {
  for (int t = 0; t < texts; ++t) {
    T* out = pooled + static_cast<int64_t>(t) * cols;
    for (int j = 0; j < cols; ++j) out[j] = 0;
    for (int r = 0; r < lengths[t]; ++r) {
      const T* xr = x + static_cast<int64_t>(offsets[t] + r) * cols;
      for (int j = 0; j < cols; ++j) out[j] += xr[j];
    }
    const T inv = T(1) / T(lengths[t]);
    for (int j = 0; j < cols; ++j) out[j] *= inv;
  }
}

template <typename T>
void mean_pool_backward(int texts, const int32_t* offsets, const int32_t* lengths, int cols, const T* dpooled, T* dx) {
  for (int t = 0; t < texts; ++t) {
    const T inv = T(1) / T(lengths[t]);
    for (int r = 0; r < lengths[t]; ++r) {
      T* dr = dx + static_cast<int64_t>(offsets[t] + r) * cols;
      for (int j = 0; j < cols; ++j) dr[j] = dpooled[static_cast<int64_t>(t) * cols + j] * inv;
    }
  }
}

// CLS pooling: pooled[t] = the first token's row of text t.
template <typename T>
void cls_pool_forward(int texts, const int32_t* offsets, int cols, const T* x, T* pooled) {
  for (int t = 0; t < texts; ++t) {
    const T* first = x + static_cast<int64_t>(offsets[t]) * cols;
    std::copy(first, first + cols, pooled + static_cast<int64_t>(t) * cols);
  }
}

// Every row of dx is written: the first token's gets dpooled, the others 0.
template <typename T>
void cls_pool_backward(int texts, const int32_t* offsets, const int32_t* lengths, int cols, const T* dpooled, T* dx) {
  for (int t = 0; t < texts; ++t) {
    T* rows = dx + static_cast<int64_t>(offsets[t]) * cols;
    std::fill(rows, rows + static_cast<int64_t>(lengths[t]) * cols, T(0));
    std::copy(dpooled + static_cast<int64_t>(t) * cols, dpooled + static_cast<int64_t>(t + 1) * cols, rows);
  }
}

// e = u / max(|u|, 1e-12) per row (torch.nn.functional.normalize); keeps the norms.
template <typename T>
void l2_normalize_forward(int rows, int cols, const T* u, T* e, T* norms) {
  for (int64_t r = 0; r < rows; ++r) {
    T ss = 0;
    for (int j = 0; j < cols; ++j) ss += u[r * cols + j] * u[r * cols + j];
    const T norm = std::sqrt(ss) > T(1e-12) ? std::sqrt(ss) : T(1e-12);
    norms[r] = norm;
    for (int j = 0; j < cols; ++j) e[r * cols + j] = u[r * cols + j] / norm;
  }
}

// du = (de - e·(e·de)) / |u|.
template <typename T>
void l2_normalize_backward(int rows, int cols, const T* e, const T* norms, const T* de, T* du) {
  for (int64_t r = 0; r < rows; ++r) {
    T dot = 0;
    for (int j = 0; j < cols; ++j) dot += e[r * cols + j] * de[r * cols + j];
    for (int j = 0; j < cols; ++j) du[r * cols + j] = (de[r * cols + j] - e[r * cols + j] * dot) / norms[r];
  }
}

// SetFit's CosineSimilarityLoss: mean over pairs of (cos(e_a, e_b) - label)².
// Writes d loss / d e into de (overwritten) when de is not null; returns the loss.
template <typename T>
T cosine_loss(int rows, int cols, const T* e, int pairs, const int32_t* pa, const int32_t* pb, const float* labels,
              T* de) {
  if (de)
    for (int64_t i = 0; i < static_cast<int64_t>(rows) * cols; ++i) de[i] = 0;
  T loss = 0;
  for (int p = 0; p < pairs; ++p) {
    const T* a = e + static_cast<int64_t>(pa[p]) * cols;
    const T* b = e + static_cast<int64_t>(pb[p]) * cols;
    T ab = 0, aa = 0, bb = 0;
    for (int j = 0; j < cols; ++j) {
      ab += a[j] * b[j];
      aa += a[j] * a[j];
      bb += b[j] * b[j];
    }
    const T na = std::sqrt(aa), nb = std::sqrt(bb);
    const T cos = ab / (na * nb);
    const T diff = cos - T(labels[p]);
    loss += diff * diff;
    if (!de) continue;
    const T dcos = T(2) * diff / T(pairs);
    T* da = de + static_cast<int64_t>(pa[p]) * cols;
    T* db = de + static_cast<int64_t>(pb[p]) * cols;
    for (int j = 0; j < cols; ++j) {
      da[j] += dcos * (b[j] / (na * nb) - cos * a[j] / aa);
      db[j] += dcos * (a[j] / (na * nb) - cos * b[j] / bb);
    }
  }
  return loss / T(pairs);
}

}  // namespace svc::train
