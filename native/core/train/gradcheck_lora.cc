// Gradient checks of adapter training (LoRA): the low-rank op beside a frozen linear
// layer, and the toy encoder with an adapter on all six targets against finite
// differences in double, split across three threads, and in fp32 with the frozen
// weights packed once as the trainer packs them.
#include <algorithm>
#include <cmath>
#include <vector>

#include "train/gradcheck_util.h"
#include "train/ops.h"

namespace svc::train {
namespace {

using check::compare;
using check::dot;
using check::kGradFloor;
using check::Rand;
using check::ToyEncoder;

// y = x·Wᵀ + b + s·(x·Aᵀ)·Bᵀ written into columns [2, 2 + out) of a wider output (as query, key
// and value share the fused one), W frozen: gradients for x, A and B. Ranks 8 and 16 take the
// row kernels' fixed-rank paths, others the general one; rows past a multiple of 4 and widths
// past a multiple of 16 take their tails.
GradCheck check_lora_op(const char* name, int rows, int in, int out, int rank) {
  GradCheck r{name, 0, 0};
  Rand rng{21};
  const int ldy = out + 4, col = 2;
  const double scale = 2.0 / 3.0;
  auto x = rng.vec(rows * in), w = rng.vec(out * in), bias = rng.vec(out), a = rng.vec(rank * in),
       b = rng.vec(out * rank), wy = rng.vec(rows * ldy);
  std::vector<double> lin(rows * out), y(rows * ldy), u(rows * rank);
  auto loss = [&] {
    linear_forward<double>(rows, in, out, x.data(), w.data(), bias.data(), lin.data(), nullptr);
    std::fill(y.begin(), y.end(), 0.0);
    for (int i = 0; i < rows; ++i)
      for (int j = 0; j < out; ++j) y[i * ldy + col + j] = lin[i * out + j];
    lora_forward<double>(rows, in, out, rank, scale, x.data(), a.data(), b.data(), u.data(), y.data() + col, ldy,
                         nullptr);
    return dot(y, wy);
  };
  loss();
  // Garbage in dA and dB: backward must overwrite them.
  std::vector<double> dlin(rows * out), dx(rows * in), da(rank * in, 7.0), db(out * rank, 7.0), g(rows * rank);
  for (int i = 0; i < rows; ++i)
    for (int j = 0; j < out; ++j) dlin[i * out + j] = wy[i * ldy + col + j];
  linear_backward<double>(rows, in, out, x.data(), w.data(), dlin.data(), dx.data(), 0.0, nullptr, nullptr, nullptr);
  lora_backward<double>(rows, in, out, rank, scale, x.data(), a.data(), b.data(), u.data(), wy.data() + col, ldy,
                        dx.data(), da.data(), db.data(), g.data(), nullptr);
  compare(r, x, dx, loss);
  compare(r, a, da, loss);
  compare(r, b, db, loss);
  return r;
}

std::vector<float> narrow(const std::vector<double>& v) { return std::vector<float>(v.begin(), v.end()); }

// The fp32 row kernels (VectorOps, at the SVC_ISA level) against double on the same values:
// max |fp32 - double| / max |double| over y, dx, dA and dB.
GradCheck check_lora_fp32(int rows, int in, int out, int rank) {
  Rand rng{33};
  const double scale = 2.0;
  const auto x = rng.vec(rows * in), a = rng.vec(rank * in), b = rng.vec(out * rank), dy = rng.vec(rows * out);
  std::vector<double> y(rows * out, 0.0), u(rows * rank), dx(rows * in, 0.0), da(rank * in), db(out * rank),
      g(rows * rank);
  lora_forward<double>(rows, in, out, rank, scale, x.data(), a.data(), b.data(), u.data(), y.data(), out, nullptr);
  lora_backward<double>(rows, in, out, rank, scale, x.data(), a.data(), b.data(), u.data(), dy.data(), out, dx.data(),
                        da.data(), db.data(), g.data(), nullptr);
  const std::vector<float> x32 = narrow(x), a32 = narrow(a), b32 = narrow(b), dy32 = narrow(dy);
  std::vector<float> y32(y.size(), 0.f), u32(u.size()), dx32(dx.size(), 0.f), da32(da.size()), db32(db.size()),
      g32(g.size());
  lora_forward<float>(rows, in, out, rank, static_cast<float>(scale), x32.data(), a32.data(), b32.data(), u32.data(),
                      y32.data(), out, nullptr);
  lora_backward<float>(rows, in, out, rank, static_cast<float>(scale), x32.data(), a32.data(), b32.data(), u32.data(),
                       dy32.data(), out, dx32.data(), da32.data(), db32.data(), g32.data(), nullptr);
  double worst = 0;
  int64_t compared = 0;
  auto relative = [&](const std::vector<double>& d, const std::vector<float>& f) {
    double big = 0, diff = 0;
    for (size_t i = 0; i < d.size(); ++i) {
      big = std::max(big, std::fabs(d[i]));
      diff = std::max(diff, std::fabs(d[i] - f[i]));
    }
    worst = std::max(worst, diff / big);
    compared += static_cast<int64_t>(d.size());
  };
  relative(y, y32);
  relative(dx, dx32);
  relative(da, da32);
  relative(db, db32);
  return {"lora_rank8_fp32_vs_double", worst, compared};
}

LoraConfig every_target(int rank, double alpha) {
  LoraConfig lc;
  lc.rank = rank;
  lc.alpha = alpha;
  std::fill(std::begin(lc.targets), std::end(lc.targets), true);
  return lc;
}

void check_toy_adapter(std::vector<GradCheck>& out) {
  ToyEncoder toy;
  const EncoderConfig& cfg = toy.cfg;
  const LoraConfig lc = every_target(2, 3.0);
  // B random rather than zero (its initial value), so that A's gradient is not zero.
  std::vector<double> values = toy.rng.vec(lora_param_count(cfg, lc), 0.4);
  const StepKey key{11, 5, true};
  Workspace<double> ws;
  const AdapterPass<double> forward_only{&lc, values.data(), nullptr};
  const auto loss = [&] {
    return forward_backward<double>(cfg, toy.emb, toy.params.data(), nullptr, toy.batch, key, ws, nullptr, nullptr,
                                    &forward_only);
  };
  std::vector<double> grads(values.size(), 7.0);  // garbage: must be overwritten
  const AdapterPass<double> train{&lc, values.data(), grads.data()};
  forward_backward<double>(cfg, toy.emb, toy.params.data(), nullptr, toy.batch, key, ws, nullptr, nullptr, &train);
  GradCheck whole{"toy_encoder_lora", 0, 0};
  compare(whole, values, grads, loss);
  out.push_back(whole);

  // Three text groups, their adapter gradients summed, against one pass.
  GradCheck split{"toy_encoder_lora_data_parallel", 0, 0};
  Workers three(3);
  Workspace<double> ws3;
  std::vector<double> grads3(values.size(), -3.0);
  const AdapterPass<double> train3{&lc, values.data(), grads3.data()};
  forward_backward<double>(cfg, toy.emb, toy.params.data(), nullptr, toy.batch, key, ws3, &three, nullptr, &train3);
  for (size_t i = 0; i < grads.size(); ++i) {
    const double denom = std::max({std::fabs(grads[i]), std::fabs(grads3[i]), kGradFloor});
    split.max_rel_error = std::max(split.max_rel_error, std::fabs(grads[i] - grads3[i]) / denom);
    ++split.compared;
  }
  out.push_back(split);

  // fp32 on two threads with the frozen base packed once: max |g32 - g64| / max |g64|.
  Embeddings<float> emb32;
  emb32.vocab = toy.emb.vocab;
  emb32.max_positions = toy.emb.max_positions;
  emb32.word = narrow(toy.emb.word);
  emb32.position = narrow(toy.emb.position);
  emb32.token_type = narrow(toy.emb.token_type);
  emb32.ln_g = narrow(toy.emb.ln_g);
  emb32.ln_b = narrow(toy.emb.ln_b);
  const std::vector<float> params32 = narrow(toy.params), values32 = narrow(values);
  std::vector<float> grads32(values.size(), 5.f);
  Workers two(2);
  std::vector<PackedF32> fwd, bwd;
  pack_frozen(cfg, params32.data(), fwd, bwd, &two);
  const AdapterPass<float> train32{&lc, values32.data(), grads32.data(), fwd.data(), bwd.data()};
  Workspace<float> ws32;
  forward_backward<float>(cfg, emb32, params32.data(), nullptr, toy.batch, key, ws32, &two, nullptr, &train32);
  double scale = 0, worst = 0;
  for (size_t i = 0; i < grads.size(); ++i) {
    scale = std::max(scale, std::fabs(grads[i]));
    worst = std::max(worst, std::fabs(grads32[i] - grads[i]));
  }
  out.push_back({"toy_encoder_lora_fp32_vs_double", worst / scale, static_cast<int64_t>(grads.size())});
}

}  // namespace

std::vector<GradCheck> lora_gradient_checks() {
  std::vector<GradCheck> out = {check_lora_op("lora", 5, 7, 6, 3), check_lora_op("lora_rank8", 6, 19, 37, 8),
                                check_lora_op("lora_rank16", 9, 21, 18, 16), check_lora_fp32(13, 40, 70, 8)};
  check_toy_adapter(out);
  return out;
}

}  // namespace svc::train
