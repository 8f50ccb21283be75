// An encoder's weights in the layout the kernels want: embeddings as fp32 tables,
// every linear layer pre-packed (fp32 panels, int8 per-output-channel, or bf16 pairs), Q, K and
// V fused into one [3H x H] projection. Loaded once per (file, precision) per
// process and shared: every Encoder and every worker thread holds a reference.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "encoder/adapter.h"
#include "io/config.h"
#include "kernels/gemm.h"
#include "kernels/qgemm.h"
#include "tensor/aligned_buffer.h"
#include "kernels/gemm_bf16.h"

namespace svc {

// kBf16: the linear layers' products in bf16 with fp32 sums, the kernels fine-tuning uses
// (kernels/gemm_bf16.h); everything else fp32. On CPUs with bf16 products (AVX512_BF16, with or
// without AMX); elsewhere a request for bf16 loads (and shares) the fp32 weights. Whether bf16 pays on
// this CPU is measured, not assumed: precision 'auto' (src/native/kernel-choice.ts) asks for it only then.
enum class Precision { kF32, kInt8, kBf16 };

// A linear layer in exactly one of the three packed forms, chosen by precision.
struct Linear {
  PackedF32 f32;
  PackedS8 s8;
  train::PackedBf16 bf16;     // op(B) = Wᵀ
  AlignedBuffer<float> bias;  // bf16's bias (the other forms keep theirs in the pack)
  int n() const { return f32.n ? f32.n : s8.n ? s8.n : bf16.n; }
  std::size_t bytes() const { return f32.bytes() + s8.bytes() + bf16.data.size() * 2 + bias.size() * 4; }
};

struct LayerWeights {
  Linear qkv, attn_out, inter, out;
  AlignedBuffer<float> ln1_gamma, ln1_beta, ln2_gamma, ln2_beta;
};

struct ModelWeights {
  EncoderConfig config;
  Precision precision = Precision::kF32;
  AlignedBuffer<float> word, position, token_type0;  // token_type0: the row for type id 0
  AlignedBuffer<float> emb_ln_gamma, emb_ln_beta;
  // MPNet: relative_attention_bias, [relative_attention_num_buckets x heads], shared by every layer; else empty.
  AlignedBuffer<float> relative_bias;
  std::vector<LayerWeights> layers;
  std::size_t bytes = 0;  // resident size of everything above
};

// Returns the shared copy for (weights file, precision, adapter), loading it on first use. Its
// `precision` is the one in use: kF32 for a kBf16 request on a CPU without AMX. With an adapter,
// W + scale B A is merged into each adapted layer's fp32 weights before they are quantized or
// packed: a private copy per adapter (a shared base with a low-rank path per model replaces it).
// Thread-safe; the copy is freed when the last holder lets go.
std::shared_ptr<const ModelWeights> acquire_weights(const std::string& config_path, const std::string& weights_path,
                                                    Precision precision, const AdapterSpec* adapter = nullptr);

// How many distinct weight sets are loaded in this process right now (for tests).
int loaded_weight_sets();

}  // namespace svc
