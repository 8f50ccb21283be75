// Multi-head self-attention over a packed batch: each text attends only to its
// own tokens, per head, so no padding and no mask. Q, K, V sit side by side in
// one [tokens x 3·hidden] matrix (the fused projection's output); head h owns
// columns [h·d, (h+1)·d) of each. The softmax output P is not kept: backward recomputes it
// from Q and K (heads x n² cells a text, 12 KB a token per layer for svc-small's 256-token
// texts, against a product of n·d a cell), bit for bit. A training forward keeps instead which
// cells survived dropout, a bit each (drawing the mask again cost two 64-bit hashes a cell).
#pragma once

#include <cmath>
#include <cstdint>
#include <type_traits>
#include <vector>

#include "encoder/relative_position.h"
#include "kernels/gemm_bf16.h"
#include "train/linalg.h"
#include "train/page_buffer.h"
#include "train/rng.h"
#include "train/vector_ops.h"
#include "workers.h"

namespace svc::train {

struct PackedLayout {
  int texts = 0;
  const int32_t* offsets = nullptr;  // first token row of each text
  const int32_t* lengths = nullptr;
  int text0 = 0;  // batch index of the first text: dropout masks are keyed by it
};

// MPNet's relative position bias (encoder/relative_position.h), frozen: head h's bias for every text
// length up to max_len, built once from the table when the base loads. A text of n tokens reads its
// 2 n - 1 distances from max_len - n on (entry i - j + n - 1 for query i and key j). Empty for BERT and
// XLM-RoBERTa, whose attention skips it.
template <typename T>
struct PositionBias {
  int max_len = 0;
  int64_t stride = 0;
  std::vector<T> values;

  bool empty() const { return values.empty(); }
  // table: relative_attention_bias, [buckets x heads].
  void build(const float* table, int heads, int len) {
    max_len = len;
    stride = position_bias_floats(len);
    values.assign(static_cast<size_t>(heads * stride), T(0));
    std::vector<float> head_bias(static_cast<size_t>(stride));
    for (int h = 0; h < heads; ++h) {
      mpnet_position_bias(table, heads, h, len, head_bias.data());
      std::copy(head_bias.begin(), head_bias.end(), values.begin() + h * stride);
    }
  }
  const T* head(int h, int n) const { return values.data() + h * stride + (max_len - n); }
};

inline uint64_t attention_drop_index(int text, int head, int64_t cell) {
  return (static_cast<uint64_t>(text) << 40) ^ (static_cast<uint64_t>(head) << 32) ^ static_cast<uint64_t>(cell);
}

// What a training forward keeps for its attention's backward (AttentionKept::plan sizes it):
// per text and head, a bit per cell of P (pack_kept_cells' layout), set where P after dropout is
// not 0. A cell kept by dropout where P is 0 reads as dropped, which changes nothing: P̃ = P·scale
// is 0 there either way, and the softmax backward multiplies its dP by P = 0.
template <typename T>
struct AttentionKept {
  std::vector<int64_t> bits_at;  // per text: first byte of its heads' bits
  StepBuffer<uint8_t> bits;
  bool with_bits = false;

  static int64_t head_bytes(int n) { return static_cast<int64_t>(n) * ((n + 7) / 8); }
  void plan(const PackedLayout& lay, int heads, bool bits_wanted) {
    with_bits = bits_wanted;
    bits_at.resize(lay.texts);
    int64_t bytes = 0;
    for (int t = 0; t < lay.texts; ++t) {
      bits_at[t] = bytes;
      bytes += heads * head_bytes(lay.lengths[t]);
    }
    // As layer_pass.h's fit: a block that must grow is freed first; none is kept when unused.
    const size_t n = with_bits ? static_cast<size_t>(bytes) : 0;
    if (n == 0 || n > bits.capacity()) StepBuffer<uint8_t>().swap(bits);
    bits.resize(n);
  }
};

// The bits of AttentionKept from one text and head's P after dropout (n x n), each row of P in
// (n + 7) / 8 bytes, so that fp32 sets and reads 8 cells a byte with vector compares.
template <typename T>
void pack_kept_cells(int n, const T* dropped, uint8_t* bits) {
  if constexpr (std::is_same_v<T, float>) {
    vector_ops().mask_bits(n, n, dropped, bits);
  } else {
    const int row_bytes = (n + 7) / 8;
    for (int i = 0; i < n; ++i)
      for (int j0 = 0; j0 < n; j0 += 8) {
        uint8_t byte = 0;
        for (int j = j0; j < j0 + 8 && j < n; ++j)
          byte |= static_cast<uint8_t>(dropped[static_cast<int64_t>(i) * n + j] != T(0)) << (j - j0);
        bits[static_cast<int64_t>(i) * row_bytes + j0 / 8] = byte;
      }
  }
}

// y[c] = bit c ? x[c]·scale : 0 over n x n cells (x may be y): the same products attention_dropout takes.
template <typename T>
void apply_kept_cells(int n, const uint8_t* bits, T scale, const T* x, T* y) {
  if constexpr (std::is_same_v<T, float>) {
    vector_ops().apply_mask_bits(n, n, bits, scale, x, y);
  } else {
    const int row_bytes = (n + 7) / 8;
    for (int i = 0; i < n; ++i)
      for (int j = 0; j < n; ++j) {
        const int64_t c = static_cast<int64_t>(i) * n + j;
        y[c] = (bits[static_cast<int64_t>(i) * row_bytes + j / 8] >> (j % 8)) & 1u ? x[c] * scale : T(0);
      }
  }
}

// x[c] = keep ? x[c]·scale : 0 over one text and head's cells. Their indices are consecutive
// (text and head sit above bit 32 of attention_drop_index, cells below), so fp32 takes the
// vectorized dropout loop, with the same mask.
template <typename T>
void attention_dropout(const DropoutStream& drop, T scale, int text, int head, int64_t cells, T* x) {
  if constexpr (std::is_same_v<T, float>) {
    vector_ops().dropout(drop.key, drop.threshold, scale, attention_drop_index(text, head, 0), cells, x);
  } else {
    for (int64_t c = 0; c < cells; ++c) x[c] = drop.keep(attention_drop_index(text, head, c)) ? x[c] * scale : T(0);
  }
}

// One text and head's n x n scores in place: row-wise softmax(x·scale). fp32 takes the vectorized
// loop (the engine's exp polynomial); double, the gradient checks' reference, libm.
template <typename T>
void softmax_rows(int n, T scale, T* x) {
  if constexpr (std::is_same_v<T, float>) {
    vector_ops().softmax_rows(n, n, scale, x);
  } else {
    for (int i = 0; i < n; ++i) {
      T* row = x + static_cast<int64_t>(i) * n;
      T mx = row[0] * scale;
      for (int j = 0; j < n; ++j) mx = row[j] * scale > mx ? row[j] * scale : mx;
      T sum = 0;
      for (int j = 0; j < n; ++j) sum += (row[j] = std::exp(row[j] * scale - mx));
      for (int j = 0; j < n; ++j) row[j] /= sum;
    }
  }
}

// dS = P ⊙ (dP - rowsum(P ⊙ dP)) · scale over one text and head's n x n cells, in place in dp.
template <typename T>
void softmax_backward_rows(int n, T scale, const T* p, T* dp) {
  if constexpr (std::is_same_v<T, float>) {
    vector_ops().softmax_backward_rows(n, n, scale, p, dp);
  } else {
    for (int i = 0; i < n; ++i) {
      const T* prow = p + static_cast<int64_t>(i) * n;
      T* drow = dp + static_cast<int64_t>(i) * n;
      T dot = 0;
      for (int j = 0; j < n; ++j) dot += prow[j] * drow[j];
      for (int j = 0; j < n; ++j) drow[j] = prow[j] * (drow[j] - dot) * scale;
    }
  }
}

// C = op(A)·op(B) for one text and head. With bf16 (a training step on a CPU with bf16
// products), the products big enough for the packed GEMM (64³ multiply-adds and up: long
// texts) run in bf16; smaller ones stay on the fp32 row loops, where packing would cost more.
template <typename T>
void head_product(bool bf16, bool ta, bool tb, int m, int n, int k, const T* a, int lda, const T* b, int ldb, T* c,
                  int ldc) {
  if constexpr (std::is_same_v<T, float>) {
    if (bf16 && static_cast<int64_t>(m) * n * k >= 64 * 64 * 64) {
      thread_local PackedBf16 panels;  // per thread: heads run in parallel
      pack_b_bf16(tb, b, ldb, k, n, panels, nullptr);
      gemm_bf16(ta, m, a, lda, panels, 0.f, c, ldc, nullptr);
      return;
    }
  }
  gemm<T>(ta, tb, m, n, k, a, lda, b, ldb, T(0), c, ldc);
}

// One text and head's P = softmax(Q·Kᵀ·scale + bias) into pr (n x n): forward and backward both call
// this, so backward's P is forward's to the bit. bias (MPNet, or null): the head's position bias for n
// tokens, added as bias / scale before softmax_rows scales; being frozen, it leaves backward's dS as is.
template <typename T>
void head_probs(bool bf16, int n, int d, int hidden, T scale, const T* q, T* pr, const T* bias = nullptr) {
  head_product<T>(bf16, false, true, n, n, d, q, 3 * hidden, q + hidden, 3 * hidden, pr, n);
  if (bias) {
    const T unscale = T(1) / scale;
    for (int i = 0; i < n; ++i) {
      T* row = pr + static_cast<int64_t>(i) * n;
      const T* at_key0 = bias + i + n - 1;  // key j reads at_key0[-j]
      for (int j = 0; j < n; ++j) row[j] += at_key0[-j] * unscale;
    }
  }
  softmax_rows(n, scale, pr);
}

// ctx[tokens x hidden] = softmax(Q·Kᵀ/√d + bias) (dropped out) · V, per text and head. With `kept`
// (planned for this layout), also what it was planned to keep for backward; with `bias`, MPNet's.
template <typename T>
void attention_forward(const PackedLayout& lay, int heads, int hidden, const T* qkv, T* ctx, const DropoutStream& drop,
                       double p_drop, Workers* workers, bool bf16 = false, AttentionKept<T>* kept = nullptr,
                       const PositionBias<T>* bias = nullptr) {
  const int d = hidden / heads, ld = 3 * hidden;
  const T scale = T(1) / std::sqrt(T(d));
  parallel_for(workers, static_cast<int64_t>(lay.texts) * heads, [&](int64_t w0, int64_t w1) {
    std::vector<T> pr;
    for (int64_t w = w0; w < w1; ++w) {
      const int t = static_cast<int>(w / heads), h = static_cast<int>(w % heads);
      const int n = lay.lengths[t];
      const T* q = qkv + static_cast<int64_t>(lay.offsets[t]) * ld + h * d;
      const int64_t nn = static_cast<int64_t>(n) * n;
      pr.resize(nn);
      head_probs(bf16, n, d, hidden, scale, q, pr.data(), bias && !bias->empty() ? bias->head(h, n) : nullptr);
      if (drop.active) {
        attention_dropout(drop, T(1) / T(1 - p_drop), lay.text0 + t, h, nn, pr.data());
        if (kept && kept->with_bits)
          pack_kept_cells(n, pr.data(), kept->bits.data() + kept->bits_at[t] + h * AttentionKept<T>::head_bytes(n));
      }
      head_product<T>(bf16, false, false, n, d, n, pr.data(), n, q + 2 * hidden, ld,
                      ctx + static_cast<int64_t>(lay.offsets[t]) * hidden + h * d, hidden);
    }
  });
}

// From d ctx to d qkv (overwritten): dV = P̃ᵀ·dC, dP̃ = dC·Vᵀ, dS = P ⊙ (dP - rowsum(P ⊙ dP)) / √d,
// dQ = dS·K, dK = dSᵀ·Q, where P (recomputed) is softmax(Q·Kᵀ/√d) and P̃ is P after dropout (by
// forward's kept bits, or the mask drawn again).
template <typename T>
void attention_backward(const PackedLayout& lay, int heads, int hidden, const T* qkv, const T* dctx, T* dqkv,
                        const DropoutStream& drop, double p_drop, Workers* workers, bool bf16 = false,
                        const AttentionKept<T>* kept = nullptr, const PositionBias<T>* bias = nullptr) {
  const int d = hidden / heads, ld = 3 * hidden;
  const T scale = T(1) / std::sqrt(T(d));
  parallel_for(workers, static_cast<int64_t>(lay.texts) * heads, [&](int64_t w0, int64_t w1) {
    std::vector<T> pr, dropped, dp;
    for (int64_t w = w0; w < w1; ++w) {
      const int t = static_cast<int>(w / heads), h = static_cast<int>(w % heads);
      const int n = lay.lengths[t];
      const int64_t nn = static_cast<int64_t>(n) * n;
      const int64_t row0 = lay.offsets[t];
      const T* q = qkv + row0 * ld + h * d;
      T* dq = dqkv + row0 * ld + h * d;
      const T* dc = dctx + row0 * hidden + h * d;
      pr.resize(nn);
      head_probs(bf16, n, d, hidden, scale, q, pr.data(), bias && !bias->empty() ? bias->head(h, n) : nullptr);
      const T* pv = pr.data();  // P
      const T keep_scale = drop.active ? T(1) / T(1 - p_drop) : T(1);
      const uint8_t* bits = kept && kept->with_bits
                                ? kept->bits.data() + kept->bits_at[t] + h * AttentionKept<T>::head_bytes(n)
                                : nullptr;
      const T* pd = pv;  // P̃
      if (drop.active) {
        dropped.resize(nn);
        if (bits) {
          apply_kept_cells(n, bits, keep_scale, pv, dropped.data());
        } else {
          std::copy(pv, pv + nn, dropped.begin());
          attention_dropout(drop, keep_scale, lay.text0 + t, h, nn, dropped.data());
        }
        pd = dropped.data();
      }
      head_product<T>(bf16, true, false, n, d, n, pd, n, dc, hidden, dq + 2 * hidden, ld);  // dV
      dp.resize(nn);
      head_product<T>(bf16, false, true, n, n, d, dc, hidden, q + 2 * hidden, ld, dp.data(), n);  // dP̃
      if (drop.active) {
        // dP = dP̃ ⊙ mask·scale, the mask read off P̃ instead of drawn a third time: a cell of P̃ is 0
        // where it was dropped, or where P is 0, and there dS = P ⊙ (...) is 0 whatever dP holds.
        if (bits) {
          apply_kept_cells(n, bits, keep_scale, dp.data(), dp.data());
        } else {
          const T* kept_cells = dropped.data();
          T* g = dp.data();
          for (int64_t c = 0; c < nn; ++c) g[c] = kept_cells[c] != T(0) ? g[c] * keep_scale : T(0);
        }
      }
      softmax_backward_rows(n, scale, pv, dp.data());
      head_product<T>(bf16, false, false, n, d, n, dp.data(), n, q + hidden, ld, dq, ld);  // dQ = dS·K
      head_product<T>(bf16, true, false, n, d, n, dp.data(), n, q, ld, dq + hidden, ld);   // dK = dSᵀ·Q
    }
  });
}

}  // namespace svc::train
