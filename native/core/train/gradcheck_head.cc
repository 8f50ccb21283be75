// Gradient checks of the end-to-end phase's loss: the softmax head's cross-entropy against
// finite differences, for the embeddings and the head's own weights, and the toy encoder
// trained through it (one pass and split across three threads).
#include <algorithm>
#include <cmath>
#include <vector>

#include "train/gradcheck_util.h"
#include "train/head_loss.h"

namespace svc::train {
namespace {

using check::compare;
using check::kGradFloor;
using check::Rand;
using check::ToyEncoder;

// Head weights that are multiples of 1/64 in [-1, 1]: a float holds them and them ± 2^-10 exactly,
// so the finite differences of the float weights carry no rounding of their own.
std::vector<float> exact_weights(Rand& rng, size_t n) {
  std::vector<float> w(n);
  for (float& x : w) x = static_cast<float>(std::round(rng.next() * 64) / 64);
  return w;
}

GradCheck check_head_op() {
  GradCheck r{"head_cross_entropy", 0, 0};
  Rand rng{41};
  const int rows = 5, cols = 6, classes = 3;
  std::vector<double> e = rng.vec(rows * cols);
  std::vector<float> w = exact_weights(rng, classes * cols), b = exact_weights(rng, classes);
  const std::vector<int32_t> targets = {0, 2, 1, 2, 0};
  HeadBatch head{classes, w.data(), b.data(), targets.data(), nullptr, nullptr};
  const auto loss = [&] { return head_cross_entropy<double>(rows, cols, e.data(), head, nullptr); };
  // Garbage in every gradient buffer: the loss must overwrite them.
  std::vector<double> de(e.size(), 7.0);
  std::vector<float> dw(w.size(), 7.f), db(b.size(), 7.f);
  HeadBatch with_grads = head;
  with_grads.weight_grads = dw.data();
  with_grads.bias_grads = db.data();
  head_cross_entropy<double>(rows, cols, e.data(), with_grads, de.data());
  compare(r, e, de, loss);
  // The head's own gradients (float), each weight moved by exactly ± h.
  const double h = 1.0 / 1024;
  auto against = [&](std::vector<float>& x, const std::vector<float>& analytic) {
    for (size_t i = 0; i < x.size(); ++i) {
      const float keep = x[i];
      x[i] = static_cast<float>(keep + h);
      const double up = loss();
      x[i] = static_cast<float>(keep - h);
      const double down = loss();
      x[i] = keep;
      const double numeric = (up - down) / (2 * h);
      const double denom = std::max({std::fabs(static_cast<double>(analytic[i])), std::fabs(numeric), kGradFloor});
      r.max_rel_error = std::max(r.max_rel_error, std::fabs(analytic[i] - numeric) / denom);
      ++r.compared;
    }
  };
  against(w, dw);
  against(b, db);
  return r;
}

// The toy encoder with the head's loss in place of the pairs': its parameters against finite
// differences, then the same batch split across three threads against one pass.
GradCheck check_head_model(bool parallel) {
  GradCheck r{parallel ? "toy_encoder_head_parallel" : "toy_encoder_head", 0, 0};
  ToyEncoder toy;
  Rand rng{43};
  const int classes = 3;
  const std::vector<float> w = exact_weights(rng, classes * toy.cfg.hidden), b = exact_weights(rng, classes);
  const std::vector<int32_t> targets = {2, 0, 1, 0};
  HeadBatch head{classes, w.data(), b.data(), targets.data(), nullptr, nullptr};
  PairBatch batch = toy.batch;
  batch.head = &head;
  const StepKey key{11, 5, true};
  Workspace<double> ws;
  std::vector<double> grads(toy.params.size(), 7.0);
  forward_backward<double>(toy.cfg, toy.emb, toy.params.data(), grads.data(), batch, key, ws, nullptr);
  if (!parallel) {
    compare(r, toy.params, grads, [&] {
      return forward_backward<double>(toy.cfg, toy.emb, toy.params.data(), nullptr, batch, key, ws, nullptr);
    });
    return r;
  }
  Workers workers(3);
  Workspace<double> ws3;
  std::vector<double> split(toy.params.size(), -3.0);
  forward_backward<double>(toy.cfg, toy.emb, toy.params.data(), split.data(), batch, key, ws3, &workers);
  for (size_t i = 0; i < grads.size(); ++i) {
    const double denom = std::max({std::fabs(grads[i]), std::fabs(split[i]), kGradFloor});
    r.max_rel_error = std::max(r.max_rel_error, std::fabs(grads[i] - split[i]) / denom);
    ++r.compared;
  }
  return r;
}

}  // namespace

std::vector<GradCheck> head_gradient_checks() {
  return {check_head_op(), check_head_model(false), check_head_model(true)};
}

}  // namespace svc::train
