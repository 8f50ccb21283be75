// Where every trainable tensor sits in a flat vector: the encoder layers' parameters
// (full fine-tuning) and the LoRA adapters' A and B (adapter training), with their
// checkpoint and PEFT names.
#include <array>
#include <stdexcept>

#include "kernels/gemm.h"
#include "train/linalg.h"
#include "train/model.h"

namespace svc::train {

int64_t layer_param_count(const EncoderConfig& c) {
  const int64_t h = c.hidden, f = c.intermediate;
  return 3 * h * h + 3 * h + h * h + h + 2 * h + f * h + f + h * f + h + 2 * h;
}

int64_t param_count(const EncoderConfig& c) { return layer_param_count(c) * c.layers; }

LayerOffsets layer_offsets(const EncoderConfig& c, int layer) {
  const int64_t h = c.hidden, f = c.intermediate;
  LayerOffsets o;
  int64_t at = layer_param_count(c) * layer;
  auto take = [&](int64_t n) {
    const int64_t here = at;
    at += n;
    return here;
  };
  o.wqkv = take(3 * h * h);
  o.bqkv = take(3 * h);
  o.wo = take(h * h);
  o.bo = take(h);
  o.ln1_g = take(h);
  o.ln1_b = take(h);
  o.wi = take(f * h);
  o.bi = take(f);
  o.wo2 = take(h * f);
  o.bo2 = take(h);
  o.ln2_g = take(h);
  o.ln2_b = take(h);
  return o;
}

namespace {
// Each LoRA target's module path inside a layer, as the family's checkpoint and PEFT name it: BERT and
// XLM-RoBERTa's, then MPNet's (attention.attn.{q,k,v,o}).
const char* const kLoraModulePaths[kLoraTargets] = {"attention.self.query", "attention.self.key",
                                                    "attention.self.value", "attention.output.dense",
                                                    "intermediate.dense",   "output.dense"};
const char* const kMpnetModulePaths[kLoraTargets] = {"attention.attn.q", "attention.attn.k",   "attention.attn.v",
                                                     "attention.attn.o", "intermediate.dense", "output.dense"};

const char* const* module_paths(const EncoderConfig& c) {
  return c.model_type == ModelType::kMpnet ? kMpnetModulePaths : kLoraModulePaths;
}
}  // namespace

std::vector<ParamTensor> param_tensors(const EncoderConfig& c) {
  std::vector<ParamTensor> out;
  const int64_t h = c.hidden, f = c.intermediate;
  const char* const* modules = module_paths(c);
  // The LayerNorm after attention: attention.output.LayerNorm, MPNet's attention.LayerNorm.
  const std::string attention_ln =
      c.model_type == ModelType::kMpnet ? "attention.LayerNorm" : "attention.output.LayerNorm";
  for (int l = 0; l < c.layers; ++l) {
    const LayerOffsets o = layer_offsets(c, l);
    const std::string p = "encoder.layer." + std::to_string(l) + ".";
    for (int i = 0; i < 3; ++i) {
      out.push_back({p + modules[kLoraQuery + i] + ".weight", o.wqkv + i * h * h, {h, h}, true});
      out.push_back({p + modules[kLoraQuery + i] + ".bias", o.bqkv + i * h, {h}, false});
    }
    out.push_back({p + modules[kLoraAttentionOutput] + ".weight", o.wo, {h, h}, true});
    out.push_back({p + modules[kLoraAttentionOutput] + ".bias", o.bo, {h}, false});
    out.push_back({p + attention_ln + ".weight", o.ln1_g, {h}, false});
    out.push_back({p + attention_ln + ".bias", o.ln1_b, {h}, false});
    out.push_back({p + "intermediate.dense.weight", o.wi, {f, h}, true});
    out.push_back({p + "intermediate.dense.bias", o.bi, {f}, false});
    out.push_back({p + "output.dense.weight", o.wo2, {h, f}, true});
    out.push_back({p + "output.dense.bias", o.bo2, {h}, false});
    out.push_back({p + "output.LayerNorm.weight", o.ln2_g, {h}, false});
    out.push_back({p + "output.LayerNorm.bias", o.ln2_b, {h}, false});
  }
  return out;
}

namespace {
const char* const kLoraTargetNames[kLoraTargets] = {
    "query", "key", "value", "attention.output.dense", "intermediate.dense", "output.dense"};
}  // namespace

const char* lora_target_name(int target) { return kLoraTargetNames[target]; }

int lora_target_index(const std::string& name) {
  for (int t = 0; t < kLoraTargets; ++t)
    if (name == kLoraTargetNames[t]) return t;
  return -1;
}

void lora_shape(const EncoderConfig& c, int target, int& in, int& out) {
  in = target == kLoraOutput ? c.intermediate : c.hidden;
  out = target == kLoraIntermediate ? c.intermediate : c.hidden;
}

int lora_linear(int target) {
  static const int kLinear[kLoraTargets] = {0, 0, 0, 1, 2, 3};
  return kLinear[target];
}

int64_t lora_layer_count(const EncoderConfig& c, const LoraConfig& lora) {
  int64_t n = 0;
  for (int t = 0; t < kLoraTargets; ++t) {
    if (!lora.targets[t]) continue;
    int in = 0, out = 0;
    lora_shape(c, t, in, out);
    n += static_cast<int64_t>(lora.rank) * (in + out);
  }
  return n;
}

int64_t lora_param_count(const EncoderConfig& c, const LoraConfig& lora) {
  return lora_layer_count(c, lora) * c.layers;
}

LoraOffsets lora_offsets(const EncoderConfig& c, const LoraConfig& lora, int layer) {
  LoraOffsets o;
  int64_t at = lora_layer_count(c, lora) * layer;
  for (int t = 0; t < kLoraTargets; ++t) {
    o.a[t] = o.b[t] = -1;
    if (!lora.targets[t]) continue;
    int in = 0, out = 0;
    lora_shape(c, t, in, out);
    o.a[t] = at;
    at += static_cast<int64_t>(lora.rank) * in;
    o.b[t] = at;
    at += static_cast<int64_t>(lora.rank) * out;
  }
  return o;
}

std::vector<ParamTensor> lora_tensors(const EncoderConfig& c, const LoraConfig& lora) {
  std::vector<ParamTensor> out;
  const int64_t r = lora.rank;
  for (int l = 0; l < c.layers; ++l) {
    const LoraOffsets o = lora_offsets(c, lora, l);
    const std::string p = "base_model.model.encoder.layer." + std::to_string(l) + ".";
    for (int t = 0; t < kLoraTargets; ++t) {
      if (!lora.targets[t]) continue;
      int in = 0, outs = 0;
      lora_shape(c, t, in, outs);
      // PEFT's Trainer decays every LoRA weight (neither is a bias nor a LayerNorm).
      out.push_back({p + module_paths(c)[t] + ".lora_A.weight", o.a[t], {r, in}, true});
      out.push_back({p + module_paths(c)[t] + ".lora_B.weight", o.b[t], {outs, r}, true});
    }
  }
  return out;
}

namespace {

// A layer's four weight matrices: where each sits in the layer's params, and its [out x in] shape.
struct LayerMatrix {
  int64_t at;
  int out, in;
};

std::array<LayerMatrix, kPanelsPerLayer> layer_matrices(const EncoderConfig& c) {
  const int h = c.hidden, f = c.intermediate;
  const LayerOffsets o = layer_offsets(c, 0);
  return {{{o.wqkv, 3 * h, h}, {o.wo, h, h}, {o.wi, f, h}, {o.wo2, h, f}}};
}

// Packs each matrix twice, one pool task each: as y = x·Wᵀ needs it (forward) and as dx = dy·W does.
template <typename Packed, typename PackOne>
void pack_layer(const EncoderConfig& c, const float* layer, Packed* fwd, Packed* bwd, Workers* workers,
                PackOne pack_one) {
  const std::array<LayerMatrix, kPanelsPerLayer> matrices = layer_matrices(c);
  parallel_for(workers, 2 * kPanelsPerLayer, [&](int64_t t0, int64_t t1) {
    for (int64_t t = t0; t < t1; ++t) {
      const int m = static_cast<int>(t % kPanelsPerLayer);
      const bool forward = t < kPanelsPerLayer;
      const LayerMatrix& w = matrices[m];
      pack_one(forward, layer + w.at, w.out, w.in, forward ? fwd[m] : bwd[m]);
    }
  });
}

}  // namespace

void pack_frozen_layer(const EncoderConfig& c, const float* layer, PackedF32* fwd, PackedF32* bwd, Workers* workers) {
  pack_layer(c, layer, fwd, bwd, workers, [](bool forward, const float* w, int out, int in, PackedF32& dst) {
    if (forward) {
      dst = pack_frozen_f32(w, out, in);
      return;
    }
    // dx = dy·W: op(B) is W itself, which pack_f32 takes as the [in x out] matrix Wᵀ.
    std::vector<float> wt(static_cast<size_t>(out) * in);
    for (int r = 0; r < out; ++r)
      for (int i = 0; i < in; ++i) wt[static_cast<size_t>(i) * out + r] = w[static_cast<int64_t>(r) * in + i];
    dst = pack_frozen_f32(wt.data(), in, out);
  });
}

void pack_frozen_layer_bf16(const EncoderConfig& c, const float* layer, PackedBf16* fwd, PackedBf16* bwd,
                            Workers* workers) {
  // As a full fine-tuning step packs them (pack_weights): Wᵀ for y = x·Wᵀ, W for dx = dy·W.
  pack_layer(c, layer, fwd, bwd, workers, [](bool forward, const float* w, int out, int in, PackedBf16& dst) {
    if (forward)
      pack_b_bf16(true, w, in, in, out, dst, nullptr);
    else
      pack_b_bf16(false, w, in, out, in, dst, nullptr);
  });
}

void pack_frozen(const EncoderConfig& c, const float* params, std::vector<PackedF32>& fwd, std::vector<PackedF32>& bwd,
                 Workers* workers) {
  fwd.resize(static_cast<size_t>(kPanelsPerLayer) * c.layers);
  bwd.resize(fwd.size());
  for (int l = 0; l < c.layers; ++l)
    pack_frozen_layer(c, params + layer_param_count(c) * l, &fwd[kPanelsPerLayer * l], &bwd[kPanelsPerLayer * l],
                      workers);
}

void check_lora_config(const EncoderConfig& c, const LoraConfig& lora) {
  if (lora.rank < 1 || lora.rank > c.hidden)
    throw std::invalid_argument("adapter rank must be an integer in [1, " + std::to_string(c.hidden) + "]");
  if (!(lora.alpha > 0) || !(lora.alpha < 1e6)) throw std::invalid_argument("adapter alpha must be a positive number");
  bool any = false;
  for (bool t : lora.targets) any = any || t;
  if (!any) throw std::invalid_argument("adapter targets must name at least one layer");
}

}  // namespace svc::train
