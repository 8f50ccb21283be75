// The end-to-end phase's loss (SetFit's `end_to_end`): a softmax head over the normalized
// embeddings, trained with the encoder on the examples' cross-entropy. Its backward hands
// forward_backward d loss / d each text's normalized embedding, Wᵀ(p - y) / n, the same entry
// point the contrastive loss feeds, and writes the head's own gradients beside it.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

namespace svc::train {

// A batch's head: `classes` rows of weights (classes x hidden, row-major) and biases, each
// text's class, and where the head's gradients go (null: not wanted).
struct HeadBatch {
  int classes = 0;
  const float* weights = nullptr;
  const float* bias = nullptr;
  const int32_t* targets = nullptr;
  float* weight_grads = nullptr;
  float* bias_grads = nullptr;
};

// Mean cross-entropy of softmax(W·e + b) over `rows` embeddings e (rows x cols); when de is not
// null, d loss / d e into it (every entry overwritten) and, when the head asks, d loss / d W and b.
template <typename T>
T head_cross_entropy(int rows, int cols, const T* e, const HeadBatch& head, T* de) {
  const int k = head.classes;
  std::vector<T> p(k);
  if (head.weight_grads) std::fill(head.weight_grads, head.weight_grads + static_cast<int64_t>(k) * cols, 0.f);
  if (head.bias_grads) std::fill(head.bias_grads, head.bias_grads + k, 0.f);
  T loss = 0;
  const T inv_n = T(1) / T(rows);
  for (int r = 0; r < rows; ++r) {
    const T* x = e + static_cast<int64_t>(r) * cols;
    T top = 0;
    for (int c = 0; c < k; ++c) {
      T z = T(head.bias[c]);
      const float* w = head.weights + static_cast<int64_t>(c) * cols;
      for (int j = 0; j < cols; ++j) z += T(w[j]) * x[j];
      p[c] = z;
      top = c == 0 ? z : std::max(top, z);
    }
    T sum = 0;
    for (int c = 0; c < k; ++c) sum += (p[c] = std::exp(p[c] - top));
    const int y = head.targets[r];
    loss += -std::log(p[y] / sum);
    if (!de) continue;
    T* dx = de + static_cast<int64_t>(r) * cols;
    std::fill(dx, dx + cols, T(0));
    for (int c = 0; c < k; ++c) {
      const T g = (p[c] / sum - T(c == y ? 1 : 0)) * inv_n;
      const float* w = head.weights + static_cast<int64_t>(c) * cols;
      for (int j = 0; j < cols; ++j) dx[j] += g * T(w[j]);
      if (head.weight_grads) {
        float* dw = head.weight_grads + static_cast<int64_t>(c) * cols;
        for (int j = 0; j < cols; ++j) dw[j] += static_cast<float>(g * x[j]);
      }
      if (head.bias_grads) head.bias_grads[c] += static_cast<float>(g);
    }
  }
  return loss * inv_n;
}

}  // namespace svc::train
