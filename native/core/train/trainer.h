// The fine-tuning session: fp32 master weights loaded from the base model's
// safetensors, AdamW state, and the threads; each step() runs one batch of
// pairs forward and backward and updates the weights. save() writes the
// trained encoder as fp16 safetensors with the checkpoint's own tensor names.
// With an adapter (options.adapter.rank > 0) the base stays frozen, packed once,
// with neither gradients nor optimizer state; only the LoRA A and B of the
// adapted layers train, and adapter_tensors() hands them out under PEFT's names.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "train/adamw.h"
#include "train/model.h"
#include "io/safetensors.h"
#include "workers.h"

namespace svc::train {

using io::StoredTensor;

struct TrainerOptions {
  std::optional<double> dropout;  // unset: the config's hidden_dropout_prob
  AdamWOptions adam;              // adam.total_steps drives the schedule
  uint64_t seed = 42;
  int threads = 1;
  // Gradients whose global L2 norm exceeds this are scaled down to it before the update
  // (sentence-transformers and SetFit clip at 1); 0 leaves them as they are.
  double max_grad_norm = 0;
  // Train the embedding tables (word, position, token type, their LayerNorm) too, as
  // sentence-transformers does; false keeps them as loaded.
  bool train_embeddings = false;
  // The base model's pooling (first token's row instead of the mean) and whether a Normalize module
  // follows it; not in config.json, so the caller says (src/native/trainer.ts, from the base model).
  bool cls_pooling = false;
  bool normalize = true;
  // Run a step's linear-layer products in bf16 with fp32 accumulation where the CPU has
  // AVX512_BF16 (gemm_bf16.h); the weights, gradients and updates stay fp32. false: fp32 products.
  bool bf16_products = true;
  // LoRA adapter training: rank 0 fine-tunes the whole encoder. A starts uniform in
  // ±1/√in (PEFT's Kaiming-uniform with a = √5) from `seed`, B at zero; AdamW, its decay
  // and schedule as above, on A and B only. The base's products stay fp32.
  LoraConfig adapter;
};

// One trained adapter matrix: A [r x in] or B [out x r], row-major.
struct AdapterTensor {
  std::string name;  // PEFT's, e.g. base_model.model.encoder.layer.0.attention.self.query.lora_A.weight
  int64_t rows, cols;
  const float* data;  // valid while the trainer lives and takes no step
};

struct StepResult {
  double loss = 0;
  double lr = 0;         // the learning rate this step applied
  int64_t step = 0;      // steps done after this one
  double grad_norm = 0;  // global L2 norm of the gradient, before clipping
};

// SetFit's end-to-end phase after the contrastive one (trainer_head.cc): a softmax head over the
// normalized embeddings trained together with the encoder (or only its adapter) on the examples'
// cross-entropy, each with an AdamW of its own: linear decay to zero over the phase, no warm-up.
struct HeadPhaseOptions {
  int classes = 0;
  double body_lr = 1e-5;
  double head_lr = 1e-2;
  double weight_decay = 0.01;  // SetFit's l2_weight, on the body and the head's weights
  int64_t total_steps = 1;
};

class Trainer {
 public:
  // Loads a BERT checkpoint (names with or without a "bert." prefix) and its config.json;
  // every tensor must have the shape the config gives it.
  Trainer(const std::string& config_path, const std::string& weights_path, const TrainerOptions& options);
  // From tensors already in memory (tests build toy encoders this way).
  Trainer(const EncoderConfig& config, std::map<std::string, StoredTensor> checkpoint, const TrainerOptions& options);

  StepResult step(const PairBatch& batch);
  // Loss of a batch without dropout and without updating anything.
  double evaluate(const PairBatch& batch);
  // Pooled (and, with options.normalize, normalized) embeddings (no dropout), texts x hidden, into out;
  // runs in slices of about 1,024 tokens to bound the activations kept.
  void embed(const int32_t* ids, const int32_t* lengths, int texts, float* out);
  void save(const std::string& path) const;
  // Starts the end-to-end phase from the given head (classes x hidden weights, then the biases).
  void start_head_phase(const HeadPhaseOptions& options, const float* weights, const float* bias);
  // One step of it over `texts` packed texts and their classes; the embedding tables stay as they are.
  StepResult head_step(const int32_t* ids, const int32_t* lengths, int texts, const int32_t* targets);
  // The head as trained so far: weights (classes x hidden), then the biases.
  const std::vector<float>& head() const { return head_; }
  // The adapter's A and B of every adapted layer, layer by layer; empty without an adapter.
  std::vector<AdapterTensor> adapter_tensors() const;
  bool has_adapter() const { return lora_.rank > 0; }

  const EncoderConfig& config() const { return cfg_; }
  int64_t steps_done() const { return adam_->steps_done(); }
  // The encoder's parameters; with an adapter, only the frozen base's biases and LayerNorm (its
  // weight matrices live packed).
  const std::vector<float>& params() const { return params_; }

 private:
  void init(const TrainerOptions& options, const std::string& source);
  using TensorValues = std::function<std::vector<float>(const std::string&, const std::vector<int64_t>&)>;
  void init_adapter(const TrainerOptions& options, const TensorValues& values);
  // What the optimizer updates: the encoder's parameters, or the adapter's.
  std::vector<float>& trained() { return has_adapter() ? lora_params_ : params_; }
  std::vector<float>& trained_grads() { return has_adapter() ? lora_grads_ : grads_; }
  // The adapter's view of a pass (null without an adapter); with_grads: backward writes lora_grads_.
  std::optional<AdapterPass<float>> adapter_pass(bool with_grads);
  // Global L2 norm of grads_ and, when they train, the embedding gradients.
  double gradient_norm();
  // The embedding tables with their gradients and optimizers, in one order.
  std::vector<std::vector<float>*> embedding_tables();
  std::vector<std::vector<float>*> embedding_gradients();
  static constexpr int64_t kNormBlock = 1 << 16;
  // Checkpoint tensors held as fp32 here, and where: the frozen embeddings and every layer.
  std::map<std::string, const float*> fp32_sources() const;
  std::vector<std::string> fp32_tensor_names() const;

  std::map<std::string, StoredTensor> checkpoint_;  // original tensors, for the names and frozen parts
  std::string prefix_;
  EncoderConfig cfg_;
  Embeddings<float> emb_;
  std::vector<float> params_, grads_;
  std::unique_ptr<AdamW> adam_;
  // When the embeddings train: their gradients and one optimizer per table (the
  // same schedule and decay rules; LayerNorm without decay).
  bool train_embeddings_ = false;
  EmbeddingGrads<float> emb_grads_;
  std::vector<std::unique_ptr<AdamW>> emb_adam_;
  std::unique_ptr<Workers> workers_;
  Workspace<float> ws_;
  uint64_t seed_ = 0;
  bool bf16_products_ = true;
  double max_grad_norm_ = 0;
  // Adapter training: its settings, parameters and gradients, and the frozen base's panels.
  LoraConfig lora_;
  std::vector<float> lora_params_, lora_grads_;
  std::vector<PackedF32> frozen_fwd_, frozen_bwd_;
  // The frozen base again as bf16 panels where a step's products run in bf16 (empty otherwise);
  // evaluation and embedding keep the fp32 panels, as the published encoder computes.
  std::vector<PackedBf16> frozen_fwd16_, frozen_bwd16_;
  std::vector<LayerOffsets> frozen_layers_;
  // The end-to-end phase: its head, the head's gradients, and the two optimizers.
  HeadPhaseOptions head_options_;
  std::vector<float> head_, head_grads_;
  std::unique_ptr<AdamW> head_adam_, joint_adam_;
};

}  // namespace svc::train
