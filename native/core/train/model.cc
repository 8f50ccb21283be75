#include "train/model.h"

#include <algorithm>
#include <functional>
#include <stdexcept>
#include <type_traits>

#include "tensor/half.h"
#include "train/layer_pass.h"
#include "train/ops.h"

namespace svc::train {

namespace {

// x = LN(word + position + type 0) per token; keeps the LayerNorm's x̂ and 1/σ
// in ws for the embeddings' backward.
template <typename T>
void embed_tokens(const EncoderConfig& cfg, const Embeddings<T>& emb, const PairBatch& b, Workspace<T>& ws, T* x) {
  const int h = cfg.hidden;
  std::vector<T> sum(h), wide(h);
  for (int t = 0; t < b.texts; ++t) {
    for (int i = 0; i < b.lengths[t]; ++i) {
      const int64_t row = ws.offsets[t] + i;
      const int32_t id = b.ids[row];
      const T* word = emb.word.data() + static_cast<int64_t>(id) * h;
      if (!emb.word_f16.empty()) {
        for (int j = 0; j < h; ++j) wide[j] = T(half_to_float(emb.word_f16[static_cast<int64_t>(id) * h + j]));
        word = wide.data();
      }
      // Positions count from the family's offset (XLM-RoBERTa: pad_token_id + 1).
      const T* pos = emb.position.data() + static_cast<int64_t>(cfg.position_offset + i) * h;
      for (int j = 0; j < h; ++j) sum[j] = word[j] + pos[j] + emb.token_type[j];
      layer_norm_forward<T>(1, h, sum.data(), emb.ln_g.data(), emb.ln_b.data(), cfg.layer_norm_eps, x + row * h,
                            ws.emb_xhat.data() + row * h, ws.emb_rstd.data() + row);
    }
  }
}

// One group of consecutive texts of the batch: `text0` and `row0` place it in
// the whole batch, so dropout masks (keyed by global text and row) are the same
// however the batch is split.
struct TextGroup {
  const int32_t* ids;
  const int32_t* lengths;
  int texts, text0;
  int64_t row0;
};

template <typename T>
LayerPass<T> layer_pass(const EncoderConfig& cfg, const Embeddings<T>& emb, const T* params, int l,
                        const PackedLayout& lay, const TextGroup& g, const StepKey& key, Workspace<T>& ws,
                        Workers* workers, const PackedF32* panels, const PackedBf16* panels16,
                        const AdapterPass<T>* ad) {
  LayerPass<T> lp{cfg,    params,    ad && ad->layers ? ad->layers[l] : layer_offsets(cfg, l),
                  l,      ws.tokens, lay,
                  g.row0, key,       workers,
                  panels, panels16,  ad};
  if (!emb.position_bias.empty()) lp.position_bias = &emb.position_bias;
  return lp;
}

// Forward over one group; ws.emb gets the group's normalized embeddings. With `keep` (backward
// follows), every layer's LayerActivations stay in ws for it; without, one layer's are reused.
template <typename T>
void forward_pass(const EncoderConfig& cfg, const Embeddings<T>& emb, const T* params, const TextGroup& g,
                  const StepKey& key, Workspace<T>& ws, Workers* workers, const PackedF32* panels,
                  const PackedBf16* panels16, const AdapterPass<T>* ad, bool keep) {
  const int h = cfg.hidden, f = cfg.intermediate;
  const double p = key.training ? cfg.dropout : 0.0;
  ws.offsets.resize(g.texts);
  int64_t tokens = 0;
  for (int t = 0; t < g.texts; ++t) {
    ws.offsets[t] = static_cast<int32_t>(tokens);
    tokens += g.lengths[t];
  }
  const int rows = static_cast<int>(tokens);
  const size_t th = static_cast<size_t>(tokens) * h, tf = static_cast<size_t>(tokens) * f;
  ws.tokens = rows;
  const PackedLayout lay{g.texts, ws.offsets.data(), g.lengths, g.text0};
  if (ws.layers.size() < static_cast<size_t>(keep ? cfg.layers : 1)) ws.layers.resize(keep ? cfg.layers : 1);
  for (StepBuffer<T>* v : {&ws.x0, &ws.x, &ws.h1, &ws.tmp, &ws.emb_xhat}) fit(*v, th);
  for (StepBuffer<T>* v : {&ws.act, &ws.cdf}) fit(*v, tf);
  ws.emb_rstd.resize(rows);
  PairBatch sub;
  sub.ids = g.ids;
  sub.lengths = g.lengths;
  sub.texts = g.texts;
  embed_tokens(cfg, emb, sub, ws, ws.x0.data());
  dropout_apply(dropout_stream(key.seed, key.step, -1, DropSite::kEmbeddings, p), p, g.row0, rows, h, ws.x0.data());

  for (int l = 0; l < cfg.layers; ++l) {
    LayerPass<T> lp = layer_pass(cfg, emb, params, l, lay, g, key, ws, workers, panels, panels16, ad);
    lp.keep_bits = keep;
    layer_forward(lp, l == 0 ? ws.x0.data() : ws.x.data(), ws.x.data(), ws, ws.layers[keep ? l : 0]);
  }

  ws.pooled.resize(static_cast<int64_t>(g.texts) * h);
  ws.emb.resize(static_cast<int64_t>(g.texts) * h);
  ws.norms.resize(g.texts);
  if (emb.cls_pooling)
    cls_pool_forward<T>(g.texts, ws.offsets.data(), h, ws.x.data(), ws.pooled.data());
  else
    mean_pool_forward<T>(g.texts, ws.offsets.data(), g.lengths, h, ws.x.data(), ws.pooled.data());
  if (emb.normalize)
    l2_normalize_forward<T>(g.texts, h, ws.pooled.data(), ws.emb.data(), ws.norms.data());
  else
    std::copy(ws.pooled.begin(), ws.pooled.end(), ws.emb.begin());
}

// Backward over one group from d loss / d (its normalized embeddings) in ws.demb;
// weight-matrix gradients are written, bias and LayerNorm ones added. With grads
// null (adapter training: the base is frozen) only the adapter's gradients.
// With `emb` (the embeddings train), also d loss / d the embedding LayerNorm's
// input per token into ws.emb_dsum and its γ, β gradients into ws.emb_dln_g, _b.
template <typename T>
void backward_pass(const EncoderConfig& cfg, const Embeddings<T>& embeddings, const T* params, T* grads,
                   const TextGroup& g, const StepKey& key, Workspace<T>& ws, Workers* workers, const PackedF32* panels,
                   const PackedBf16* panels16, bool train_embeddings, const AdapterPass<T>* ad) {
  const int h = cfg.hidden, f = cfg.intermediate;
  const double p = key.training ? cfg.dropout : 0.0;
  const int rows = ws.tokens;
  const size_t th = static_cast<size_t>(rows) * h, tf = static_cast<size_t>(rows) * f;
  const PackedLayout lay{g.texts, ws.offsets.data(), g.lengths, g.text0};
  ws.dpooled.resize(ws.emb.size());
  for (StepBuffer<T>* v : {&ws.dy, &ws.dh, &ws.dctx}) fit(*v, th);
  fit(ws.dqkv, 3 * th);
  fit(ws.dbig, tf);
  if (embeddings.normalize)
    l2_normalize_backward<T>(g.texts, h, ws.emb.data(), ws.norms.data(), ws.demb.data(), ws.dpooled.data());
  else
    std::copy(ws.demb.begin(), ws.demb.begin() + static_cast<int64_t>(g.texts) * h, ws.dpooled.begin());
  if (embeddings.cls_pooling)
    cls_pool_backward<T>(g.texts, ws.offsets.data(), g.lengths, h, ws.dpooled.data(), ws.dy.data());
  else
    mean_pool_backward<T>(g.texts, ws.offsets.data(), g.lengths, h, ws.dpooled.data(), ws.dy.data());

  for (int l = cfg.layers - 1; l >= 0; --l) {
    const LayerPass<T> lp = layer_pass(cfg, embeddings, params, l, lay, g, key, ws, workers, panels, panels16, ad);
    // The layer's input: the embeddings (kept), or the layer below's output from its x̂.
    const T* x = ws.x0.data();
    if (l > 0) {
      const LayerOffsets below = ad && ad->layers ? ad->layers[l - 1] : layer_offsets(cfg, l - 1);
      layer_norm_affine<T>(rows, h, ws.layers[l - 1].xhat2.data(), params + below.ln2_g, params + below.ln2_b,
                           ws.x.data());
      x = ws.x.data();
    }
    // Frozen embeddings need no gradient, so layer 0 then skips d input.
    layer_backward(lp, x, grads, l > 0 || train_embeddings, ws, ws.layers[l]);
  }
  if (!train_embeddings) return;
  // ws.dy holds d loss / d (layer 0 input) = d (dropped-out embedding LayerNorm output).
  dropout_apply(dropout_stream(key.seed, key.step, -1, DropSite::kEmbeddings, p), p, g.row0, rows, h, ws.dy.data());
  ws.emb_dsum.resize(th);
  ws.emb_dln_g.assign(h, T(0));
  ws.emb_dln_b.assign(h, T(0));
  layer_norm_backward<T>(rows, h, ws.dy.data(), ws.emb_xhat.data(), ws.emb_rstd.data(), embeddings.ln_g.data(),
                         ws.emb_dsum.data(), ws.emb_dln_g.data(), ws.emb_dln_b.data());
}

// Adds every group's d (embedding sum) into the rows of the tables its tokens
// used, in batch row order (the same order whatever the thread count).
template <typename T>
void scatter_embedding_grads(const EncoderConfig& cfg, const Embeddings<T>& emb, const std::vector<TextGroup>& groups,
                             const std::vector<Workspace<T>>& parts, EmbeddingGrads<T>& out) {
  const int64_t h = cfg.hidden;
  out.word.assign(emb.word.size(), T(0));
  out.position.assign(emb.position.size(), T(0));
  out.token_type.assign(emb.token_type.size(), T(0));
  out.ln_g.assign(h, T(0));
  out.ln_b.assign(h, T(0));
  for (size_t i = 0; i < groups.size(); ++i) {
    const Workspace<T>& part = parts[i];
    add_into(h, part.emb_dln_g.data(), out.ln_g.data());
    add_into(h, part.emb_dln_b.data(), out.ln_b.data());
    int64_t row = 0;
    for (int t = 0; t < groups[i].texts; ++t) {
      for (int pos = 0; pos < groups[i].lengths[t]; ++pos, ++row) {
        const T* d = part.emb_dsum.data() + row * h;
        add_into(h, d, out.word.data() + static_cast<int64_t>(groups[i].ids[row]) * h);
        add_into(h, d, out.position.data() + pos * h);
        // Every token is of type 0; MPNet has no token types, so its zero row stays zero.
        if (cfg.model_type != ModelType::kMpnet) add_into(h, d, out.token_type.data());
      }
    }
  }
}

// Packs every weight matrix once for the step, as y = x·Wᵀ needs it (forward)
// and as dx = dy·W needs it (backward), one matrix per pool task. `Packed` is
// PackedF32 (pack_b) or PackedBf16 (pack_b_bf16).
template <typename Packed, typename PackFn>
void pack_weights(const EncoderConfig& cfg, const float* params, bool backward, std::vector<Packed>& fwd,
                  std::vector<Packed>& bwd, Workers* workers, PackFn pack) {
  const int h = cfg.hidden, f = cfg.intermediate, per = kPanelsPerLayer;
  fwd.resize(per * cfg.layers);
  bwd.resize(per * cfg.layers);
  const int64_t tasks = static_cast<int64_t>(per) * cfg.layers * (backward ? 2 : 1);
  parallel_for(workers, tasks, [&](int64_t t0, int64_t t1) {
    for (int64_t t = t0; t < t1; ++t) {
      const int index = static_cast<int>(t % (per * cfg.layers)), l = index / per, m = index % per;
      const LayerOffsets o = layer_offsets(cfg, l);
      const int64_t at[4] = {o.wqkv, o.wo, o.wi, o.wo2};
      const int outs[4] = {3 * h, h, f, h}, ins[4] = {h, h, h, f};
      if (t < per * cfg.layers)
        pack(true, params + at[m], ins[m], ins[m], outs[m], fwd[index], nullptr);
      else
        pack(false, params + at[m], ins[m], outs[m], ins[m], bwd[index], nullptr);
    }
  });
}

// Weight matrices' gradients are written whole by backward; the vectors (biases,
// LayerNorm) are summed over tokens into place, so only they need zeroing first.
template <typename T>
void zero_vector_grads(const EncoderConfig& cfg, T* grads) {
  const int64_t h = cfg.hidden, f = cfg.intermediate;
  for (int l = 0; l < cfg.layers; ++l) {
    const LayerOffsets o = layer_offsets(cfg, l);
    std::fill(grads + o.bqkv, grads + o.bqkv + 3 * h, T(0));
    std::fill(grads + o.bo, grads + o.bo + 3 * h, T(0));  // bo, ln1_g, ln1_b are adjacent
    std::fill(grads + o.bi, grads + o.bi + f, T(0));
    std::fill(grads + o.bo2, grads + o.bo2 + 3 * h, T(0));  // bo2, ln2_g, ln2_b are adjacent
  }
}

// Cuts the batch into at most `parts` groups of consecutive texts with about
// equal tokens; fewer when there are too few texts.
std::vector<TextGroup> split_texts(const PairBatch& b, int parts) {
  int64_t total = 0;
  for (int t = 0; t < b.texts; ++t) total += b.lengths[t];
  std::vector<TextGroup> groups;
  int t = 0;
  int64_t row = 0;
  for (int part = 0; part < parts && t < b.texts; ++part) {
    const int64_t target = total * (part + 1) / parts;
    TextGroup g{b.ids + row, b.lengths + t, 0, t, row};
    while (t < b.texts && (g.texts == 0 || row + b.lengths[t] / 2 <= target || part == parts - 1)) {
      row += b.lengths[t++];
      ++g.texts;
    }
    groups.push_back(g);
  }
  return groups;
}

}  // namespace

template <typename T>
T forward_backward(const EncoderConfig& cfg, const Embeddings<T>& emb, const T* params, T* grads, const PairBatch& b,
                   const StepKey& key, Workspace<T>& ws, Workers* workers, EmbeddingGrads<T>* emb_grads,
                   const AdapterPass<T>* adapter) {
  const int h = cfg.hidden;
  if (adapter && grads) throw std::invalid_argument("an adapter trains on a frozen base: no base gradients");
  if (adapter && adapter->layers && !adapter->forward)
    throw std::invalid_argument("a compact frozen base needs its packed panels");
  int64_t tokens = 0;
  for (int t = 0; t < b.texts; ++t) {
    if (b.lengths[t] <= 0 || b.lengths[t] > emb.max_positions - cfg.position_offset)
      throw std::invalid_argument("text length out of range");
    tokens += b.lengths[t];
  }
  for (int64_t i = 0; i < tokens; ++i)
    if (b.ids[i] < 0 || b.ids[i] >= emb.vocab) throw std::invalid_argument("token id out of range");
  for (int i = 0; i < b.pairs; ++i)
    if (b.pair_a[i] < 0 || b.pair_a[i] >= b.texts || b.pair_b[i] < 0 || b.pair_b[i] >= b.texts)
      throw std::invalid_argument("pair index out of range");
  if (b.head) {
    if (b.head->classes < 2) throw std::invalid_argument("a head needs at least two classes");
    for (int t = 0; t < b.texts; ++t)
      if (b.head->targets[t] < 0 || b.head->targets[t] >= b.head->classes)
        throw std::invalid_argument("head target out of range");
  }

  // Data parallel across threads: each runs whole layers on its own texts with
  // single-threaded kernels, meeting only for the loss and the gradient sum, so
  // a step synchronizes three times instead of at every kernel.
  const int threads = workers ? workers->size() : 1;
  const std::vector<TextGroup> groups = split_texts(b, threads);
  const int parts = static_cast<int>(groups.size());
  ws.parts.resize(parts);
  auto each_group = [&](const std::function<void(int)>& fn) {
    if (parts == 1)
      fn(0);
    else
      workers->run(parts, [&](int64_t i, int) { fn(static_cast<int>(i)); });
  };
  Workers* inner = parts == 1 ? workers : nullptr;
  const PackedF32* fwd = nullptr;
  const PackedF32* bwd = nullptr;
  const PackedBf16* fwd16 = nullptr;
  const PackedBf16* bwd16 = nullptr;
  // What backward writes: the base's gradients, or the adapter's.
  T* train_grads = adapter ? adapter->grads : grads;
  if constexpr (std::is_same_v<T, float>) {
    // A training step runs its linear layers' products in bf16 where the CPU has them;
    // evaluation and embedding stay fp32, as the published encoder computes. An adapter's
    // frozen base is packed once by its owner: fp32 panels, and bf16 ones for a step's products
    // where the CPU has them (a PackedWeight's bf16 panels take precedence).
    if (adapter && adapter->forward) {
      fwd = adapter->forward;
      bwd = adapter->backward;
      fwd16 = adapter->forward16;
      bwd16 = adapter->backward16;
    } else if (grads && key.bf16 && bf16_products()) {
      pack_weights(cfg, params, true, ws.bf16_fwd, ws.bf16_bwd, workers, pack_b_bf16);
      fwd16 = ws.bf16_fwd.data();
      bwd16 = ws.bf16_bwd.data();
    } else {
      pack_weights(cfg, params, train_grads != nullptr, ws.panels_fwd, ws.panels_bwd, workers, pack_b);
      fwd = ws.panels_fwd.data();
      bwd = ws.panels_bwd.data();
    }
  }
  // Only a step that runs backward keeps every layer's activations.
  const bool keep = train_grads != nullptr && (b.pairs > 0 || b.head);
  each_group(
      [&](int i) { forward_pass(cfg, emb, params, groups[i], key, ws.parts[i], inner, fwd, fwd16, adapter, keep); });

  ws.emb.resize(static_cast<int64_t>(b.texts) * h);
  for (int i = 0; i < parts; ++i)
    std::copy(ws.parts[i].emb.begin(), ws.parts[i].emb.end(),
              ws.emb.begin() + static_cast<int64_t>(groups[i].text0) * h);
  if (b.pairs == 0 && !b.head) return T(0);
  ws.demb.resize(ws.emb.size());
  T* demb = train_grads ? ws.demb.data() : nullptr;
  const T loss = b.head ? head_cross_entropy<T>(b.texts, h, ws.emb.data(), *b.head, demb)
                        : cosine_loss<T>(b.texts, h, ws.emb.data(), b.pairs, b.pair_a, b.pair_b, b.labels, demb);
  if (!train_grads) return loss;

  const int64_t n = adapter ? lora_param_count(cfg, *adapter->config) : param_count(cfg);
  ws.part_grads.resize(parts);
  each_group([&](int i) {
    Workspace<T>& part = ws.parts[i];
    part.demb.assign(ws.demb.begin() + static_cast<int64_t>(groups[i].text0) * h,
                     ws.demb.begin() + static_cast<int64_t>(groups[i].text0 + groups[i].texts) * h);
    T* target = train_grads;
    if (i > 0) {
      ws.part_grads[i].resize(n);
      target = ws.part_grads[i].data();
    }
    // The group's own view of the adapter: its gradients go to its own buffer.
    AdapterPass<T> part_adapter;
    if (adapter) {
      part_adapter = *adapter;
      part_adapter.grads = target;
    } else {
      zero_vector_grads(cfg, target);
    }
    backward_pass(cfg, emb, params, adapter ? nullptr : target, groups[i], key, part, inner, bwd, bwd16,
                  emb_grads != nullptr, adapter ? &part_adapter : nullptr);
  });
  if (emb_grads) scatter_embedding_grads(cfg, emb, groups, ws.parts, *emb_grads);
  // Sum the groups' gradients in group order: fixed for a given thread count.
  if (parts > 1)
    parallel_for_grain(workers, n, 4096, [&](int64_t i0, int64_t i1) {
      for (int i = 1; i < parts; ++i) {
        const T* src = ws.part_grads[i].data();
        for (int64_t j = i0; j < i1; ++j) train_grads[j] += src[j];
      }
    });
  return loss;
}

template float forward_backward<float>(const EncoderConfig&, const Embeddings<float>&, const float*, float*,
                                       const PairBatch&, const StepKey&, Workspace<float>&, Workers*,
                                       EmbeddingGrads<float>*, const AdapterPass<float>*);
template double forward_backward<double>(const EncoderConfig&, const Embeddings<double>&, const double*, double*,
                                         const PairBatch&, const StepKey&, Workspace<double>&, Workers*,
                                         EmbeddingGrads<double>*, const AdapterPass<double>*);

}  // namespace svc::train
