// The trainer's end-to-end phase (SetFit's `end_to_end`): after the contrastive steps, a softmax
// head and the encoder (or the adapter) train together on the examples' cross-entropy. The loss and
// its gradient with respect to each normalized embedding come from head_cross_entropy(); the
// backward from there is the contrastive step's. Kept apart from trainer.cc so the contrastive path
// stays as it is.
#include <algorithm>
#include <stdexcept>

#include "train/trainer.h"

namespace svc::train {

void Trainer::start_head_phase(const HeadPhaseOptions& o, const float* weights, const float* bias) {
  if (o.classes < 2) throw std::invalid_argument("the end-to-end head needs at least two classes");
  if (o.total_steps < 1) throw std::invalid_argument("the end-to-end phase needs at least one step");
  if (!(o.body_lr >= 0) || !(o.head_lr >= 0) || !(o.weight_decay >= 0))
    throw std::invalid_argument("end-to-end learning rates and decay must be non-negative numbers");
  head_options_ = o;
  const int64_t h = cfg_.hidden, k = o.classes;
  head_.assign(weights, weights + k * h);
  head_.insert(head_.end(), bias, bias + k);
  head_grads_.assign(head_.size(), 0.f);
  AdamWOptions head;
  head.lr = o.head_lr;
  head.weight_decay = o.weight_decay;
  head.warmup_ratio = 0;
  head.total_steps = o.total_steps;
  std::vector<uint8_t> head_decay(head_.size(), 0);
  std::fill(head_decay.begin(), head_decay.begin() + k * h, 1);
  head_adam_ = std::make_unique<AdamW>(head, std::move(head_decay));
  // The body's decay as the contrastive phase's: an adapter's A and B all decay; the full encoder's
  // weight matrices do, its biases and LayerNorm do not.
  AdamWOptions body = head;
  body.lr = o.body_lr;
  std::vector<uint8_t> body_decay(trained().size(), 1);
  if (!has_adapter())
    for (const ParamTensor& p : param_tensors(cfg_)) {
      int64_t n = 1;
      for (const int64_t d : p.shape) n *= d;
      std::fill(body_decay.begin() + p.offset, body_decay.begin() + p.offset + n, p.decay ? 1 : 0);
    }
  joint_adam_ = std::make_unique<AdamW>(body, std::move(body_decay));
}

StepResult Trainer::head_step(const int32_t* ids, const int32_t* lengths, int texts, const int32_t* targets) {
  if (!joint_adam_) throw std::invalid_argument("start the end-to-end phase before its steps");
  if (texts < 1) throw std::invalid_argument("an end-to-end step needs at least one text");
  const int64_t h = cfg_.hidden, k = head_options_.classes;
  HeadBatch head;
  head.classes = head_options_.classes;
  head.weights = head_.data();
  head.bias = head_.data() + k * h;
  head.targets = targets;
  head.weight_grads = head_grads_.data();
  head.bias_grads = head_grads_.data() + k * h;
  PairBatch batch;
  batch.ids = ids;
  batch.lengths = lengths;
  batch.texts = texts;
  batch.head = &head;
  // Dropout masks keyed past the contrastive steps, so the phase draws masks of its own.
  const uint64_t step = static_cast<uint64_t>(adam_->steps_done() + joint_adam_->steps_done());
  const StepKey key{seed_, step, true, bf16_products_};
  const std::optional<AdapterPass<float>> ad = adapter_pass(true);
  StepResult r;
  r.loss = forward_backward<float>(cfg_, emb_, params_.data(), ad ? nullptr : grads_.data(), batch, key, ws_,
                                   workers_.get(), nullptr, ad ? &*ad : nullptr);
  r.grad_norm = gradient_norm();
  // The head's update reads the gradients at the weights the loss was computed with.
  head_adam_->step(head_.data(), head_grads_.data());
  r.lr = joint_adam_->step(trained().data(), trained_grads().data(), workers_.get());
  r.step = joint_adam_->steps_done();
  return r;
}

}  // namespace svc::train
