// The BERT encoder as a trainable function of a flat parameter vector: the
// training-mode forward over a packed batch keeps what backward needs, and
// backward fills a gradient vector of the same layout. The embedding tables are
// kept apart from that vector: frozen by default, trained when the caller passes
// EmbeddingGrads (trainEmbeddings). Templated on the scalar: float for training,
// double for the whole-model gradient check.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "io/config.h"
#include "train/attention.h"
#include "train/head_loss.h"
#include "kernels/gemm_bf16.h"
#include "train/page_buffer.h"
#include "workers.h"

namespace svc::train {

// Where each tensor of one layer sits in the flat vector. Query, key and value
// weights are adjacent, so together they are one [3·hidden x hidden] matrix.
struct LayerOffsets {
  int64_t wqkv, bqkv, wo, bo, ln1_g, ln1_b, wi, bi, wo2, bo2, ln2_g, ln2_b;
};

struct ParamTensor {
  std::string name;  // checkpoint name, e.g. encoder.layer.0.attention.self.query.weight
  int64_t offset;
  std::vector<int64_t> shape;
  bool decay;  // AdamW weight decay applies (not biases, not LayerNorm), as HF
};

// The four weight matrices of a layer, in the order their packed panels are kept:
// query-key-value, attention output, FFN in, FFN out.
constexpr int kPanelsPerLayer = 4;

int64_t layer_param_count(const EncoderConfig& cfg);
int64_t param_count(const EncoderConfig& cfg);
LayerOffsets layer_offsets(const EncoderConfig& cfg, int layer);
std::vector<ParamTensor> param_tensors(const EncoderConfig& cfg);

// LoRA: the linear layers that get a low-rank adapter. Query, key and value are the
// three column blocks of the fused projection; the other three are whole layers.
enum LoraTarget : int {
  kLoraQuery,
  kLoraKey,
  kLoraValue,
  kLoraAttentionOutput,
  kLoraIntermediate,
  kLoraOutput,
  kLoraTargets
};

struct LoraConfig {
  int rank = 0;  // 0: no adapter
  double alpha = 0;
  bool targets[kLoraTargets] = {};
  double scale() const { return alpha / rank; }
};

// Where each adapted layer's A [r x in] and B [out x r] sit in the adapter's flat vector
// (layer by layer, targets in LoraTarget order, A then B); -1 where a target is not adapted.
struct LoraOffsets {
  int64_t a[kLoraTargets], b[kLoraTargets];
};

// "query", "key", "value", "attention.output.dense", "intermediate.dense", "output.dense".
const char* lora_target_name(int target);
int lora_target_index(const std::string& name);  // -1 for an unknown name
void lora_shape(const EncoderConfig& cfg, int target, int& in, int& out);
int lora_linear(int target);  // which of the layer's kPanelsPerLayer linear layers it adapts
int64_t lora_param_count(const EncoderConfig& cfg, const LoraConfig& lora);
LoraOffsets lora_offsets(const EncoderConfig& cfg, const LoraConfig& lora, int layer);
// A and B of every adapted layer, named as PEFT's LoRA state dict of a BertModel
// (base_model.model.encoder.layer.0.attention.self.query.lora_A.weight).
std::vector<ParamTensor> lora_tensors(const EncoderConfig& cfg, const LoraConfig& lora);
// The frozen base's weight matrices packed once for adapter training, kPanelsPerLayer per
// layer as AdapterPass takes them; fp16 panels where every weight is an fp16 value (an fp16
// checkpoint) and the kernel widens fp16: half the memory, the same fp32 arithmetic.
void pack_frozen(const EncoderConfig& cfg, const float* params, std::vector<PackedF32>& forward,
                 std::vector<PackedF32>& backward, Workers* workers);
// One layer's kPanelsPerLayer panels of each layout from its layer_param_count() parameters.
void pack_frozen_layer(const EncoderConfig& cfg, const float* layer, PackedF32* forward, PackedF32* backward,
                       Workers* workers);
// The same layer's matrices as bf16 panels, for a training step's products (only when bf16_products()).
void pack_frozen_layer_bf16(const EncoderConfig& cfg, const float* layer, PackedBf16* forward, PackedBf16* backward,
                            Workers* workers);
// Throws std::invalid_argument naming the first bad setting.
void check_lora_config(const EncoderConfig& cfg, const LoraConfig& lora);

// Adapter training's view of a pass: the LoRA parameters (and their gradients when it trains)
// and, in fp32, the frozen base weights packed once (kPanelsPerLayer per layer, in the layouts
// of y = x·Wᵀ and dx = dy·W); null panels: pack per pass.
template <typename T>
struct AdapterPass {
  const LoraConfig* config = nullptr;
  const T* values = nullptr;
  T* grads = nullptr;
  const PackedF32* forward = nullptr;
  const PackedF32* backward = nullptr;
  // With the panels: where each layer's vectors (biases, LayerNorm) sit in a compact params
  // that holds no matrices; null: layer_offsets().
  const LayerOffsets* layers = nullptr;
  // A training step's frozen base in bf16 panels (the same layouts), where the CPU has bf16 products:
  // the base's products run in bf16 with fp32 sums, the adapter's row kernels stay fp32. Null: fp32.
  const PackedBf16* forward16 = nullptr;
  const PackedBf16* backward16 = nullptr;
};

// The embedding tables (frozen unless trainEmbeddings); the encoder input of token i is LN(word + position + type 0).
template <typename T>
struct Embeddings {
  int vocab = 0, max_positions = 0;
  // How the last layer's rows become a text's embedding (sentence-transformers' Pooling and Normalize
  // modules; not in config.json): kept with the tables, which every pass reads. Without normalize the
  // cosine pair loss is unchanged (it divides by the norms) and the head phase sees the raw embedding.
  bool cls_pooling = false;
  bool normalize = true;
  // MPNet: a zero token type row (it has none), and its frozen relative position bias.
  std::vector<T> word, position, token_type, ln_g, ln_b;
  PositionBias<T> position_bias;
  // A frozen word table from an fp16 checkpoint (adapter training) stays fp16 here, word
  // empty, each row widened as a token uses it: half the memory, the same values.
  std::vector<uint16_t> word_f16;
};

// Gradients of the embedding tables when they train (dense, as PyTorch keeps them).
template <typename T>
struct EmbeddingGrads {
  std::vector<T> word, position, token_type, ln_g, ln_b;
};

// A packed batch: every text's ids back to back, and the pairs the loss compares.
struct PairBatch {
  const int32_t* ids = nullptr;
  const int32_t* lengths = nullptr;
  int texts = 0;
  const int32_t* pair_a = nullptr;
  const int32_t* pair_b = nullptr;
  const float* labels = nullptr;
  int pairs = 0;
  // The end-to-end phase: with a head, the loss is its cross-entropy over every text (pairs unused).
  const HeadBatch* head = nullptr;
};

// What one layer's backward reads and cannot recompute cheaply: the fused Q, K, V (attention's
// backward recomputes P from them), the attention's context, the FFN's pre-activation, the two
// LayerNorms' x̂ and 1/σ. Their outputs (the FFN's input, the next layer's input) come back as
// g·x̂ + b, and the GELU's output and Φ from the pre-activation, bit for bit: 15 KB a token for
// svc-small instead of 31 KB plus the attention probabilities (12 KB at 256 tokens).
template <typename T>
struct LayerActivations {
  StepBuffer<T> qkv, ctx, xhat1, inter, xhat2;
  std::vector<T> rstd1, rstd2;
  // Adapter training: s·x·Aᵀ of each target (rows x r), target t from t·rows·r.
  std::vector<T> lora_u;
  // The attention's dropout mask, a bit a cell (attention.h), so backward need not draw it again.
  AttentionKept<T> attention;
};

template <typename T>
struct Workspace {
  int tokens = 0;
  std::vector<int32_t> offsets;
  std::vector<LayerActivations<T>> layers;
  // x0: layer 0's input (the embeddings after dropout), kept. x: forward, the running layer
  // input and output; backward, the input of the layer at hand, recomputed. h1, act, cdf: the
  // layer at hand's FFN input, GELU output and Φ (one layer's worth, reused by every layer).
  StepBuffer<T> x0, x, h1, act, cdf;
  std::vector<T> pooled, norms, emb;
  // The embedding LayerNorm's x̂ and 1/σ per token, and (backward) d loss / d its input.
  StepBuffer<T> emb_xhat;
  std::vector<T> emb_rstd, emb_dsum, emb_dln_g, emb_dln_b;
  // When a step runs data-parallel: one workspace and one gradient buffer per text group.
  std::vector<Workspace<T>> parts;
  std::vector<std::vector<T>> part_grads;
  // fp32: every weight matrix packed once per step for all groups (forward and backward layouts).
  std::vector<PackedF32> panels_fwd, panels_bwd;
  // A training step where the CPU has bf16 products packs these instead (gemm_bf16.h).
  std::vector<PackedBf16> bf16_fwd, bf16_bwd;
  // backward scratch
  StepBuffer<T> dy, dh, dbig, dqkv, dctx, tmp;
  std::vector<T> demb, dpooled, lora_g;
};

// Dropout is on when `training`; its masks are a function of (seed, step).
struct StepKey {
  uint64_t seed = 0;
  uint64_t step = 0;
  bool training = true;
  // With grads, the linear layers' products run in bf16 when bf16_products() (gemm_bf16.h).
  bool bf16 = false;
};

// Runs the forward pass and returns the cosine-similarity loss (the head's cross-entropy when the
// batch has a head); ws.emb holds
// the normalized embeddings. When grads is not null, also runs backward and
// writes d loss / d params into grads (every entry is overwritten), and when
// emb_grads is not null too, d loss / d the embedding tables into it.
// With `adapter`, every adapted layer adds its low-rank path; when adapter->grads
// is not null (and grads is, the base being frozen), backward writes d loss / d the
// adapter's A and B into it (every entry overwritten) and nothing else.
template <typename T>
T forward_backward(const EncoderConfig& cfg, const Embeddings<T>& emb, const T* params, T* grads,
                   const PairBatch& batch, const StepKey& key, Workspace<T>& ws, Workers* workers,
                   EmbeddingGrads<T>* emb_grads = nullptr, const AdapterPass<T>* adapter = nullptr);

}  // namespace svc::train
