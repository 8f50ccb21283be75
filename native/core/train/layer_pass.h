// One encoder layer's training forward and backward over a group of packed texts. Forward
// keeps only LayerActivations (see model.h); backward recomputes the rest from them with the
// very calls forward made (the LayerNorms' g·x̂ + b, the GELU, attention's P), so a step's
// numbers are those of a pass that kept everything, in about a third of the memory.
#pragma once

#include <vector>

#include "train/attention.h"
#include "train/lora_layer.h"
#include "train/model.h"
#include "train/ops.h"

namespace svc::train {

// What a layer's passes share: where its parameters are, its texts, its dropout masks and
// products. `row0` and lay.text0 place the group in the whole batch, so the masks are the same
// however the batch is split.
template <typename T>
struct LayerPass {
  const EncoderConfig& cfg;
  const T* params;
  LayerOffsets o;
  int l;
  int rows;
  const PackedLayout& lay;
  int64_t row0;
  const StepKey& key;
  Workers* workers;
  const PackedF32* panels;  // null: pack per product
  const PackedBf16* panels16;
  const AdapterPass<T>* ad;
  // Forward keeps this layer's attention dropout mask, as bits, for backward.
  bool keep_bits = false;
  // MPNet's position bias (every layer's the same); null for the other families.
  const PositionBias<T>* position_bias = nullptr;

  double p() const { return key.training ? cfg.dropout : 0.0; }
  DropoutStream stream(DropSite site) const { return dropout_stream(key.seed, key.step, l, site, p()); }
  PackedWeight forward_weight(int m) const {
    const int i = kPanelsPerLayer * l + m;
    return PackedWeight{panels ? &panels[i] : nullptr, nullptr, panels16 ? &panels16[i] : nullptr, nullptr};
  }
  PackedWeight backward_weight(int m) const {
    const int i = kPanelsPerLayer * l + m;
    return PackedWeight{nullptr, panels ? &panels[i] : nullptr, nullptr, panels16 ? &panels16[i] : nullptr};
  }
};

// Sizes a buffer whose contents do not matter; one that must grow is freed first, so its old
// and new blocks are never held together (a longer batch than the last would otherwise hold both).
template <typename V>
void fit(V& v, size_t n) {
  if (n > v.capacity()) V().swap(v);
  v.resize(n);
}

template <typename T>
void add_into(int64_t n, const T* a, T* y) {
  for (int64_t i = 0; i < n; ++i) y[i] += a[i];
}

// y = layer(x); y may be x (x is dead once the attention's residual is added). Uses ws.tmp,
// ws.h1, ws.act and ws.cdf as scratch, sized by the caller.
template <typename T>
void layer_forward(const LayerPass<T>& lp, const T* x, T* y, Workspace<T>& ws, LayerActivations<T>& a) {
  const EncoderConfig& cfg = lp.cfg;
  const LayerOffsets& o = lp.o;
  const int h = cfg.hidden, f = cfg.intermediate, rows = lp.rows;
  const size_t th = static_cast<size_t>(rows) * h, tf = static_cast<size_t>(rows) * f;
  const T* params = lp.params;
  Workers* workers = lp.workers;
  fit(a.qkv, 3 * th);
  fit(a.ctx, th);
  fit(a.xhat1, th);
  fit(a.inter, tf);
  fit(a.xhat2, th);
  a.rstd1.resize(rows);
  a.rstd2.resize(rows);
  linear_forward<T>(rows, h, 3 * h, x, params + o.wqkv, params + o.bqkv, a.qkv.data(), workers, lp.forward_weight(0));
  lora_forward_linear(cfg, lp.ad, lp.l, 0, rows, x, a.qkv.data(), 3 * h, a, workers);
  const DropoutStream attention_drop = lp.stream(DropSite::kAttentionProbs);
  a.attention.plan(lp.lay, cfg.heads, lp.keep_bits && attention_drop.active);
  attention_forward<T>(lp.lay, cfg.heads, h, a.qkv.data(), a.ctx.data(), attention_drop, lp.p(), workers,
                       lp.panels16 != nullptr, &a.attention, lp.position_bias);
  linear_forward<T>(rows, h, h, a.ctx.data(), params + o.wo, params + o.bo, ws.tmp.data(), workers,
                    lp.forward_weight(1));
  lora_forward_linear(cfg, lp.ad, lp.l, 1, rows, a.ctx.data(), ws.tmp.data(), h, a, workers);
  dropout_apply(lp.stream(DropSite::kAttentionOutput), lp.p(), lp.row0, rows, h, ws.tmp.data());
  add_into(th, x, ws.tmp.data());
  layer_norm_forward<T>(rows, h, ws.tmp.data(), params + o.ln1_g, params + o.ln1_b, cfg.layer_norm_eps, ws.h1.data(),
                        a.xhat1.data(), a.rstd1.data());
  linear_forward<T>(rows, h, f, ws.h1.data(), params + o.wi, params + o.bi, a.inter.data(), workers,
                    lp.forward_weight(2));
  lora_forward_linear(cfg, lp.ad, lp.l, 2, rows, ws.h1.data(), a.inter.data(), f, a, workers);
  gelu_forward<T>(tf, a.inter.data(), ws.act.data(), ws.cdf.data(), workers);
  linear_forward<T>(rows, f, h, ws.act.data(), params + o.wo2, params + o.bo2, ws.tmp.data(), workers,
                    lp.forward_weight(3));
  lora_forward_linear(cfg, lp.ad, lp.l, 3, rows, ws.act.data(), ws.tmp.data(), h, a, workers);
  dropout_apply(lp.stream(DropSite::kFfnOutput), lp.p(), lp.row0, rows, h, ws.tmp.data());
  add_into(th, ws.h1.data(), ws.tmp.data());
  layer_norm_forward<T>(rows, h, ws.tmp.data(), params + o.ln2_g, params + o.ln2_b, cfg.layer_norm_eps, y,
                        a.xhat2.data(), a.rstd2.data());
}

// From ws.dy = d loss / d (layer output) to ws.dy = d loss / d x (x: the layer's input, which the
// caller recomputes), unless need_dx is false. Weight-matrix gradients are written, bias and
// LayerNorm ones added; grads null (a frozen base) skips them. Scratch as layer_forward, plus
// ws.dh, ws.dctx, ws.dqkv, ws.dbig.
template <typename T>
void layer_backward(const LayerPass<T>& lp, const T* x, T* grads, bool need_dx, Workspace<T>& ws,
                    const LayerActivations<T>& a) {
  const EncoderConfig& cfg = lp.cfg;
  const LayerOffsets& o = lp.o;
  const int h = cfg.hidden, f = cfg.intermediate, rows = lp.rows, l = lp.l;
  const int64_t th = static_cast<int64_t>(rows) * h, tf = static_cast<int64_t>(rows) * f;
  const T* params = lp.params;
  Workers* workers = lp.workers;
  const AdapterPass<T>* ad = lp.ad;
  // Null gradient pointers make the linear and LayerNorm backward skip their parameters.
  auto grad = [&](int64_t offset) { return grads ? grads + offset : nullptr; };
  layer_norm_backward<T>(rows, h, ws.dy.data(), a.xhat2.data(), a.rstd2.data(), params + o.ln2_g, ws.dh.data(),
                         grad(o.ln2_g), grad(o.ln2_b));
  ws.tmp.assign(ws.dh.begin(), ws.dh.begin() + th);
  dropout_apply(lp.stream(DropSite::kFfnOutput), lp.p(), lp.row0, rows, h, ws.tmp.data());
  gelu_forward<T>(tf, a.inter.data(), ws.act.data(), ws.cdf.data(), workers);
  linear_backward<T>(rows, f, h, ws.act.data(), params + o.wo2, ws.tmp.data(), ws.dbig.data(), T(0), grad(o.wo2),
                     grad(o.bo2), workers, lp.backward_weight(3));
  lora_backward_linear(cfg, ad, l, 3, rows, ws.act.data(), ws.tmp.data(), h, ws.dbig.data(), a, ws.lora_g, workers);
  gelu_backward<T>(tf, a.inter.data(), ws.cdf.data(), ws.dbig.data(), ws.dbig.data(), workers);
  // The residual already put d(output LN input) into dh; add the FFN branch.
  layer_norm_affine<T>(rows, h, a.xhat1.data(), params + o.ln1_g, params + o.ln1_b, ws.h1.data());
  linear_backward<T>(rows, h, f, ws.h1.data(), params + o.wi, ws.dbig.data(), ws.dh.data(), T(1), grad(o.wi),
                     grad(o.bi), workers, lp.backward_weight(2));
  lora_backward_linear(cfg, ad, l, 2, rows, ws.h1.data(), ws.dbig.data(), f, ws.dh.data(), a, ws.lora_g, workers);
  layer_norm_backward<T>(rows, h, ws.dh.data(), a.xhat1.data(), a.rstd1.data(), params + o.ln1_g, ws.dy.data(),
                         grad(o.ln1_g), grad(o.ln1_b));
  ws.tmp.assign(ws.dy.begin(), ws.dy.begin() + th);
  dropout_apply(lp.stream(DropSite::kAttentionOutput), lp.p(), lp.row0, rows, h, ws.tmp.data());
  linear_backward<T>(rows, h, h, a.ctx.data(), params + o.wo, ws.tmp.data(), ws.dctx.data(), T(0), grad(o.wo),
                     grad(o.bo), workers, lp.backward_weight(1));
  lora_backward_linear(cfg, ad, l, 1, rows, a.ctx.data(), ws.tmp.data(), h, ws.dctx.data(), a, ws.lora_g, workers);
  attention_backward<T>(lp.lay, cfg.heads, h, a.qkv.data(), ws.dctx.data(), ws.dqkv.data(),
                        lp.stream(DropSite::kAttentionProbs), lp.p(), workers, lp.panels16 != nullptr, &a.attention,
                        lp.position_bias);
  T* dx = need_dx ? ws.dy.data() : nullptr;
  linear_backward<T>(rows, h, 3 * h, x, params + o.wqkv, ws.dqkv.data(), dx, T(1), grad(o.wqkv), grad(o.bqkv), workers,
                     lp.backward_weight(0));
  lora_backward_linear(cfg, ad, l, 0, rows, x, ws.dqkv.data(), 3 * h, dx, a, ws.lora_g, workers);
}

}  // namespace svc::train
