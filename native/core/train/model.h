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
#include "train/gemm_bf16.h"
#include "train/workers.h"

namespace svc::train {

// Where each tensor of one layer sits in the flat vector. Query, key and value
// weights are adjacent, so together they are one [3·hidden x hidden] matrix.
struct LayerOffsets {
  int64_t wqkv, bqkv, wo, bo, ln1_g, ln1_b, wi, bi, wo2, bo2, ln2_g, ln2_b;
};

struct ParamTensor {
  std::string name;              // checkpoint name, e.g. encoder.layer.0.attention.self.query.weight
  int64_t offset;
  std::vector<int64_t> shape;
  bool decay;                    // AdamW weight decay applies (not biases, not LayerNorm), as HF
};

int64_t layer_param_count(const EncoderConfig& cfg);
int64_t param_count(const EncoderConfig& cfg);
LayerOffsets layer_offsets(const EncoderConfig& cfg, int layer);
std::vector<ParamTensor> param_tensors(const EncoderConfig& cfg);

// The embedding tables (frozen unless trainEmbeddings); the encoder input of token i is LN(word + position + type 0).
template <typename T>
struct Embeddings {
  int vocab = 0, max_positions = 0;
  std::vector<T> word, position, token_type, ln_g, ln_b;
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
};

template <typename T>
struct LayerActivations {
  std::vector<T> x, qkv, probs, ctx, xhat1, rstd1, h1, inter, cdf, act, xhat2, rstd2;
};

template <typename T>
struct Workspace {
  int tokens = 0;
  std::vector<int32_t> offsets;
  std::vector<int64_t> prob_offsets;
  std::vector<LayerActivations<T>> layers;
  std::vector<T> out, pooled, norms, emb;
  // The embedding LayerNorm's x̂ and 1/σ per token, and (backward) d loss / d its input.
  std::vector<T> emb_xhat, emb_rstd, emb_dsum, emb_dln_g, emb_dln_b;
  // When a step runs data-parallel: one workspace and one gradient buffer per text group.
  std::vector<Workspace<T>> parts;
  std::vector<std::vector<T>> part_grads;
  // fp32: every weight matrix packed once per step for all groups (forward and backward layouts).
  std::vector<PackedF32> panels_fwd, panels_bwd;
  // A training step where the CPU has bf16 products packs these instead (gemm_bf16.h).
  std::vector<PackedBf16> bf16_fwd, bf16_bwd;
  // backward scratch
  std::vector<T> dy, dh, dbig, dqkv, dctx, demb, dpooled, tmp;
};

// Dropout is on when `training`; its masks are a function of (seed, step).
struct StepKey {
  uint64_t seed = 0;
  uint64_t step = 0;
  bool training = true;
  // With grads, the linear layers' products run in bf16 when bf16_products() (gemm_bf16.h).
  bool bf16 = false;
};

// Runs the forward pass and returns the cosine-similarity loss; ws.emb holds
// the normalized embeddings. When grads is not null, also runs backward and
// writes d loss / d params into grads (every entry is overwritten), and when
// emb_grads is not null too, d loss / d the embedding tables into it.
template <typename T>
T forward_backward(const EncoderConfig& cfg, const Embeddings<T>& emb, const T* params, T* grads,
                   const PairBatch& batch, const StepKey& key, Workspace<T>& ws, Workers* workers,
                   EmbeddingGrads<T>* emb_grads = nullptr);

}  // namespace svc::train
