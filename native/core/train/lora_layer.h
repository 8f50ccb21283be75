// The LoRA paths of one encoder layer, hooked after each of its linear layers: the
// adapted targets of that layer add s·(x·Aᵀ)·Bᵀ to its output in forward, and take
// their gradients (and add their share of d input) in backward. Target t's kept
// s·x·Aᵀ sits in the layer's lora_u from t·rows·r on.
#pragma once

#include <vector>

#include "train/model.h"
#include "train/ops.h"

namespace svc::train {

// The low-rank paths of layer l's adapted targets on linear layer `linear`, which just
// wrote y = x·Wᵀ + b (row stride ldy); query, key and value add to their column blocks.
template <typename T>
void lora_forward_linear(const EncoderConfig& cfg, const AdapterPass<T>* ad, int l, int linear, int rows, const T* x,
                         T* y, int ldy, LayerActivations<T>& a, Workers* workers) {
  if (!ad) return;
  const LoraConfig& lc = *ad->config;
  const LoraOffsets o = lora_offsets(cfg, lc, l);
  a.lora_u.resize(static_cast<size_t>(rows) * lc.rank * kLoraTargets);
  for (int t = 0; t < kLoraTargets; ++t) {
    if (!lc.targets[t] || lora_linear(t) != linear) continue;
    int in = 0, out = 0;
    lora_shape(cfg, t, in, out);
    T* u = a.lora_u.data() + static_cast<int64_t>(t) * rows * lc.rank;
    const int64_t col = t <= kLoraValue ? static_cast<int64_t>(t) * cfg.hidden : 0;
    lora_forward<T>(rows, in, out, lc.rank, T(lc.scale()), x, ad->values + o.a[t], ad->values + o.b[t], u, y + col, ldy,
                    workers);
  }
}

// Backward of those paths from dy (the linear layer's output gradient, row stride ldy):
// dA, dB into ad->grads, and dx += the paths' input gradient unless dx is null.
// `a` is the layer's kept activations (its lora_u); `g` is scratch.
template <typename T>
void lora_backward_linear(const EncoderConfig& cfg, const AdapterPass<T>* ad, int l, int linear, int rows, const T* x,
                          const T* dy, int ldy, T* dx, const LayerActivations<T>& a, std::vector<T>& g,
                          Workers* workers) {
  if (!ad || !ad->grads) return;
  const LoraConfig& lc = *ad->config;
  const LoraOffsets o = lora_offsets(cfg, lc, l);
  g.resize(static_cast<size_t>(rows) * lc.rank);
  for (int t = 0; t < kLoraTargets; ++t) {
    if (!lc.targets[t] || lora_linear(t) != linear) continue;
    int in = 0, out = 0;
    lora_shape(cfg, t, in, out);
    const T* u = a.lora_u.data() + static_cast<int64_t>(t) * rows * lc.rank;
    const int64_t col = t <= kLoraValue ? static_cast<int64_t>(t) * cfg.hidden : 0;
    lora_backward<T>(rows, in, out, lc.rank, T(lc.scale()), x, ad->values + o.a[t], ad->values + o.b[t], u, dy + col,
                     ldy, dx, ad->grads + o.a[t], ad->grads + o.b[t], g.data(), workers);
  }
}

}  // namespace svc::train
