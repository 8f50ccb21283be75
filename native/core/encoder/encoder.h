// BERT encoder forward pass over a packed batch: the tokens of all texts stacked
// in one [total_tokens x hidden] matrix with no padding, attention computed per
// text and head, then each text pooled (mean or its first token) and, unless told
// otherwise, L2-normalized.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "encoder/weights.h"
#include "kernels/qgemm.h"
#include "tensor/aligned_buffer.h"
#include "thread_pool.h"

namespace svc {

// A run of consecutive texts of a packed batch predicted through one adapter (null: the base).
struct AdapterSegment {
  int64_t texts = 0;
  std::shared_ptr<const LoraAdapter> adapter;
};

// How embed() turns a text's last hidden states into its embedding: sentence-transformers'
// Pooling module (mean of the tokens, or the first token's row) and whether a Normalize module follows.
struct PoolingOptions {
  bool cls = false;
  bool normalize = true;
};

class Encoder {
 public:
  // threads >= 1: the pool size including the calling thread.
  Encoder(std::shared_ptr<const ModelWeights> weights, int threads, PoolingOptions pooling = {});

  int dim() const { return weights_->config.hidden; }
  // The tokens a text may hold: the positions the model addresses after its offset.
  int max_positions() const { return weights_->config.max_tokens(); }
  const PoolingOptions& pooling() const { return pooling_; }
  // Waits for a forward in progress: the next embed() pools the new way.
  void set_pooling(PoolingOptions pooling) {
    std::lock_guard<std::mutex> lock(mutex_);
    pooling_ = pooling;
  }
  int threads() const { return pool_.size(); }
  const ModelWeights& weights() const { return *weights_; }

  // ids holds sum(lengths) token ids, text after text; out receives n_texts x dim floats.
  // Throws std::invalid_argument on an id outside the vocabulary or a length outside [1, max_positions].
  // segments (optional): the texts in runs, each through its adapter or none; their counts add up
  // to n_texts. The base GEMMs run once over every row, and each adapted layer adds its low-rank
  // term to the rows of its run (segmented path; see docs/engine.md).
  void embed(const int32_t* ids, int64_t n_ids, const int32_t* lengths, int64_t n_texts, float* out,
             const std::vector<AdapterSegment>& segments = {});

  // Same forward, but writes the final hidden states (sum(lengths) x dim) instead of pooling.
  void hidden_states(const int32_t* ids, int64_t n_ids, const int32_t* lengths, int64_t n_texts, float* out,
                     const std::vector<AdapterSegment>& segments = {});

 private:
  void forward(const int32_t* ids, int64_t n_ids, const int32_t* lengths, int64_t n_texts,
               const std::vector<AdapterSegment>& segments);
  // The residual a linear layer adds: `residual` itself when no run of this batch adapts this
  // layer, else lora_ = residual (or 0) + scale (a_seg A^T) B^T over each adapted run of rows. The
  // low-rank term thus enters before the bias epilogue's GELU or LayerNorm, in fp32, whatever the
  // precision of the base product.
  const float* low_rank(int layer, LinearSlot slot, const float* a, int k, int64_t m, int n, const float* residual);
  // c = a W^T + b (+ residual), then GELU or (with gamma) LayerNorm of each row. c_feeds_linear:
  // c is the next linear's input, which int8 quantizes while writing c.
  void linear(const Linear& l, const float* a, int64_t m, int k, float* c, const float* residual, Epilogue ep,
              const AlignedBuffer<float>* ln_gamma = nullptr, const AlignedBuffer<float>* ln_beta = nullptr,
              bool c_feeds_linear = false);
  void layer_norm(float* x, int64_t m, const AlignedBuffer<float>& gamma, const AlignedBuffer<float>& beta);

  std::shared_ptr<const ModelWeights> weights_;
  PoolingOptions pooling_;
  ThreadPool pool_;
  std::mutex mutex_;  // one forward at a time per Encoder: scratch buffers are per instance
  std::vector<int64_t> offsets_;
  struct RowRun {
    int64_t r0, r1;
    const LoraAdapter* adapter;
  };
  std::vector<RowRun> runs_;  // this forward's adapted runs of rows
  AlignedBuffer<float> lora_;
  AlignedBuffer<float> x_, tmp_, qkv_, ctx_, inter_, scratch_, packed_a_;
  // MPNet: this forward's position bias of each head, for its longest text; empty for other families.
  AlignedBuffer<float> position_bias_;
  // int8: quant_[0] holds quantized_ (a matrix of this forward), or quantized_ is null.
  QuantizedRows quant_[2];
  const float* quantized_ = nullptr;
};

}  // namespace svc
