#include "train/gradcheck.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <stdexcept>
#include <utility>

#include "train/attention.h"
#include "train/gradcheck_util.h"
#include "train/ops.h"

namespace svc::train {
namespace {

using check::compare;
using check::dot;
using check::kGradFloor;
using check::Rand;
using check::ToyEncoder;

GradCheck check_linear() {
  GradCheck r{"linear", 0, 0};
  Rand rng{1};
  const int rows = 5, in = 7, out = 6;
  auto x = rng.vec(rows * in), w = rng.vec(out * in), b = rng.vec(out), wy = rng.vec(rows * out);
  std::vector<double> y(rows * out);
  auto loss = [&] {
    linear_forward<double>(rows, in, out, x.data(), w.data(), b.data(), y.data(), nullptr);
    return dot(y, wy);
  };
  std::vector<double> dx(rows * in), dw(out * in, 0.0), db(out, 0.0);
  linear_backward<double>(rows, in, out, x.data(), w.data(), wy.data(), dx.data(), 0.0, dw.data(), db.data(), nullptr);
  compare(r, x, dx, loss);
  compare(r, w, dw, loss);
  compare(r, b, db, loss);
  return r;
}

GradCheck check_layer_norm() {
  GradCheck r{"layer_norm", 0, 0};
  Rand rng{2};
  const int rows = 4, cols = 9;
  auto x = rng.vec(rows * cols, 2.0), g = rng.vec(cols), b = rng.vec(cols), wy = rng.vec(rows * cols);
  std::vector<double> y(rows * cols), xhat(rows * cols), rstd(rows);
  auto loss = [&] {
    layer_norm_forward<double>(rows, cols, x.data(), g.data(), b.data(), 1e-12, y.data(), xhat.data(), rstd.data());
    return dot(y, wy);
  };
  loss();
  std::vector<double> dx(rows * cols), dg(cols, 0.0), db(cols, 0.0);
  layer_norm_backward<double>(rows, cols, wy.data(), xhat.data(), rstd.data(), g.data(), dx.data(), dg.data(),
                              db.data());
  compare(r, x, dx, loss);
  compare(r, g, dg, loss);
  compare(r, b, db, loss);
  return r;
}

GradCheck check_gelu() {
  GradCheck r{"gelu", 0, 0};
  Rand rng{3};
  const int n = 64;
  auto x = rng.vec(n, 4.0), wy = rng.vec(n);
  std::vector<double> y(n), cdf(n), dx(n);
  auto loss = [&] {
    gelu_forward<double>(n, x.data(), y.data(), cdf.data(), nullptr);
    return dot(y, wy);
  };
  loss();
  gelu_backward<double>(n, x.data(), cdf.data(), wy.data(), dx.data(), nullptr);
  compare(r, x, dx, loss);
  return r;
}

// Texts of `lengths` packed one after another.
struct Packed {
  std::vector<int32_t> lengths, offsets;
  int tokens = 0;
  PackedLayout lay;
  explicit Packed(std::vector<int32_t> text_lengths) : lengths(std::move(text_lengths)) {
    for (int32_t n : lengths) {
      offsets.push_back(tokens);
      tokens += n;
    }
    lay = PackedLayout{static_cast<int>(lengths.size()), offsets.data(), lengths.data()};
  }
  Packed(const Packed&) = delete;  // lay points into this object's vectors
};

// With `biased`, MPNet's position bias (a random table, frozen): backward is unchanged, P is not.
GradCheck check_attention(bool biased = false) {
  GradCheck r{biased ? "attention_position_bias" : "attention", 0, 0};
  Rand rng{4};
  const int hidden = 8, heads = 2;
  const Packed packed({3, 5, 1, biased ? 12 : 4});
  const double p = 0.1;
  const DropoutStream drop = dropout_stream(7, 3, 0, DropSite::kAttentionProbs, p);
  auto qkv = rng.vec(static_cast<size_t>(packed.tokens) * 3 * hidden, 1.5),
       wy = rng.vec(static_cast<size_t>(packed.tokens) * hidden);
  std::vector<double> ctx(static_cast<size_t>(packed.tokens) * hidden), dqkv(qkv.size());
  PositionBias<double> bias;
  if (biased) {
    const std::vector<double> table = rng.vec(static_cast<size_t>(kMpnetBuckets) * heads, 2.0);
    bias.build(std::vector<float>(table.begin(), table.end()).data(), heads, 12);
  }
  auto loss = [&] {
    attention_forward<double>(packed.lay, heads, hidden, qkv.data(), ctx.data(), drop, p, nullptr, false, nullptr,
                              &bias);
    return dot(ctx, wy);
  };
  attention_backward<double>(packed.lay, heads, hidden, qkv.data(), wy.data(), dqkv.data(), drop, p, nullptr, false,
                             nullptr, &bias);
  compare(r, qkv, dqkv, loss);
  return r;
}

// Mean or CLS pooling (a base model's 1_Pooling), then L2 normalization and the pair loss.
GradCheck check_pool_normalize_loss(bool cls) {
  GradCheck r{cls ? "cls_pool_normalize_cosine_loss" : "pool_normalize_cosine_loss", 0, 0};
  Rand rng{5};
  const int cols = 6;
  const std::vector<int32_t> lengths = {2, 4, 3}, offsets = {0, 2, 6};
  const std::vector<int32_t> pa = {0, 1, 0, 2}, pb = {1, 2, 2, 2};
  const std::vector<float> labels = {1, 0, 0, 1};
  auto x = rng.vec(9 * cols);
  std::vector<double> pooled(3 * cols), e(3 * cols), norms(3), de(3 * cols), du(3 * cols), dx(9 * cols);
  auto loss = [&] {
    if (cls)
      cls_pool_forward<double>(3, offsets.data(), cols, x.data(), pooled.data());
    else
      mean_pool_forward<double>(3, offsets.data(), lengths.data(), cols, x.data(), pooled.data());
    l2_normalize_forward<double>(3, cols, pooled.data(), e.data(), norms.data());
    return cosine_loss<double>(3, cols, e.data(), 4, pa.data(), pb.data(), labels.data(), nullptr);
  };
  loss();
  cosine_loss<double>(3, cols, e.data(), 4, pa.data(), pb.data(), labels.data(), de.data());
  l2_normalize_backward<double>(3, cols, e.data(), norms.data(), de.data(), du.data());
  if (cls)
    cls_pool_backward<double>(3, offsets.data(), lengths.data(), cols, du.data(), dx.data());
  else
    mean_pool_backward<double>(3, offsets.data(), lengths.data(), cols, du.data(), dx.data());
  compare(r, x, dx, loss);
  return r;
}

// The fp32 GEMM (packed, vectorized, threaded) against the double reference, all transposes.
GradCheck check_gemm_fp32() {
  GradCheck r{"gemm_fp32_vs_double", 0, 0};
  Rand rng{6};
  Workers workers(2);
  const int m = 77, n = 131, k = 300;
  for (int variant = 0; variant < 4; ++variant) {
    const bool ta = variant & 1, tb = variant & 2;
    auto a = rng.vec(static_cast<size_t>(m) * k), b = rng.vec(static_cast<size_t>(k) * n), c = rng.vec(m * n);
    std::vector<float> af(a.begin(), a.end()), bf(b.begin(), b.end()), cf(c.begin(), c.end());
    std::vector<double> ar(af.begin(), af.end()), br(bf.begin(), bf.end()), cr(cf.begin(), cf.end());
    const int lda = ta ? m : k, ldb = tb ? k : n;
    gemm<float>(ta, tb, m, n, k, af.data(), lda, bf.data(), ldb, 0.5f, cf.data(), n, &workers);
    gemm<double>(ta, tb, m, n, k, ar.data(), lda, br.data(), ldb, 0.5, cr.data(), n);
    double scale = 0;
    for (double v : cr) scale = std::max(scale, std::fabs(v));
    for (size_t i = 0; i < cr.size(); ++i) {
      r.max_rel_error = std::max(r.max_rel_error, std::fabs(cf[i] - cr[i]) / scale);
      ++r.compared;
    }
  }
  return r;
}

// The fp32 GELU (polynomial erf and exp, vectorized) against the double one, forward and backward.
GradCheck check_gelu_fp32() {
  GradCheck r{"gelu_fp32_vs_double", 0, 0};
  Rand rng{8};
  const int n = 4099;
  auto x = rng.vec(n, 6.0), dy = rng.vec(n);
  std::vector<double> y(n), cdf(n), dx(n);
  gelu_forward<double>(n, x.data(), y.data(), cdf.data(), nullptr);
  gelu_backward<double>(n, x.data(), cdf.data(), dy.data(), dx.data(), nullptr);
  std::vector<float> xf(x.begin(), x.end()), dyf(dy.begin(), dy.end()), yf(n), cdff(n), dxf(n);
  gelu_forward<float>(n, xf.data(), yf.data(), cdff.data(), nullptr);
  gelu_backward<float>(n, xf.data(), cdff.data(), dyf.data(), dxf.data(), nullptr);
  for (int i = 0; i < n; ++i) {
    // Relative, with an absolute floor of 1: the polynomial erf is accurate to 1.5e-7 absolute.
    r.max_rel_error = std::max(r.max_rel_error, std::fabs(yf[i] - y[i]) / std::max(std::fabs(y[i]), 1.0));
    r.max_rel_error = std::max(r.max_rel_error, std::fabs(dxf[i] - dx[i]) / std::max(std::fabs(dx[i]), 1.0));
    r.compared += 2;
  }
  return r;
}

// The fp32 attention (vectorized softmax and its backward, the engine's exp) against the double
// one, forward and backward, with dropout; lengths around the 8- and 16-lane widths and their tails.
GradCheck check_attention_fp32() {
  GradCheck r{"attention_fp32_vs_double", 0, 0};
  Rand rng{9};
  const int hidden = 32, heads = 2;
  const Packed packed({1, 7, 16, 21, 40});
  const double p = 0.1;
  const DropoutStream drop = dropout_stream(7, 3, 0, DropSite::kAttentionProbs, p);
  // Wide scores (|q·k|/√d up to ~9) so the softmax's max shift and exp range matter.
  auto qkv = rng.vec(static_cast<size_t>(packed.tokens) * 3 * hidden, 3.0),
       dctx = rng.vec(static_cast<size_t>(packed.tokens) * hidden);
  std::vector<double> ctx(static_cast<size_t>(packed.tokens) * hidden), dqkv(qkv.size());
  attention_forward<double>(packed.lay, heads, hidden, qkv.data(), ctx.data(), drop, p, nullptr);
  attention_backward<double>(packed.lay, heads, hidden, qkv.data(), dctx.data(), dqkv.data(), drop, p, nullptr);
  std::vector<float> qkvf(qkv.begin(), qkv.end()), dctxf(dctx.begin(), dctx.end()), ctxf(ctx.size()), dqkvf(qkv.size());
  attention_forward<float>(packed.lay, heads, hidden, qkvf.data(), ctxf.data(), drop, p, nullptr);
  attention_backward<float>(packed.lay, heads, hidden, qkvf.data(), dctxf.data(), dqkvf.data(), drop, p, nullptr);
  auto against = [&r](const std::vector<float>& got, const std::vector<double>& want) {
    double scale = 0;
    for (double v : want) scale = std::max(scale, std::fabs(v));
    for (size_t i = 0; i < want.size(); ++i) {
      r.max_rel_error = std::max(r.max_rel_error, std::fabs(got[i] - want[i]) / scale);
      ++r.compared;
    }
  };
  against(ctxf, ctx);
  against(dqkvf, dqkv);
  return r;
}

// Backward from the dropout mask's bits that forward kept against backward that draws the mask
// again: the same bits of ctx and d qkv, in fp32 and double. Wide scores
// make some cells of P exactly 0 (a kept cell then reads as dropped, which must change nothing).
template <typename T>
int64_t attention_kept_mismatches(int64_t& compared) {
  Rand rng{11};
  const int hidden = 32, heads = 2;
  const Packed packed({1, 7, 16, 21, 40});
  const double p = 0.1;
  const DropoutStream drop = dropout_stream(7, 3, 0, DropSite::kAttentionProbs, p);
  const auto qkv_d = rng.vec(static_cast<size_t>(packed.tokens) * 3 * hidden, 40.0),
             dctx_d = rng.vec(static_cast<size_t>(packed.tokens) * hidden);
  const std::vector<T> qkv(qkv_d.begin(), qkv_d.end()), dctx(dctx_d.begin(), dctx_d.end());
  std::vector<T> ctx(dctx.size()), want(qkv.size());
  attention_forward<T>(packed.lay, heads, hidden, qkv.data(), ctx.data(), drop, p, nullptr);
  attention_backward<T>(packed.lay, heads, hidden, qkv.data(), dctx.data(), want.data(), drop, p, nullptr);
  int64_t mismatches = 0;
  AttentionKept<T> kept;
  kept.plan(packed.lay, heads, true);
  std::vector<T> ctx2(ctx.size()), got(qkv.size());
  attention_forward<T>(packed.lay, heads, hidden, qkv.data(), ctx2.data(), drop, p, nullptr, false, &kept);
  attention_backward<T>(packed.lay, heads, hidden, qkv.data(), dctx.data(), got.data(), drop, p, nullptr, false, &kept);
  mismatches += std::memcmp(ctx2.data(), ctx.data(), ctx.size() * sizeof(T)) != 0;
  for (size_t i = 0; i < got.size(); ++i) mismatches += std::memcmp(&got[i], &want[i], sizeof(T)) != 0;
  compared += static_cast<int64_t>(got.size());
  return mismatches;
}

GradCheck check_attention_kept() {
  GradCheck r{"attention_kept_vs_recomputed", 0, 0};
  const int64_t mismatches =
      attention_kept_mismatches<float>(r.compared) + attention_kept_mismatches<double>(r.compared);
  r.max_rel_error = mismatches ? 1.0 : 0.0;  // bitwise: any difference fails
  return r;
}

// The toy encoder's parameters and, in `embeddings` (when given, unparallel run
// only), its embedding tables, all against finite differences of the loss.
GradCheck check_whole_model(bool parallel, double& fp32_error, GradCheck* embeddings = nullptr) {
  GradCheck r{"toy_encoder_2_layers", 0, 0};
  ToyEncoder toy;
  const EncoderConfig& cfg = toy.cfg;
  Embeddings<double>& emb = toy.emb;
  std::vector<double>& params = toy.params;
  const PairBatch& batch = toy.batch;
  const StepKey key{11, 5, true};
  Workspace<double> ws;
  // Garbage in the gradient buffers: forward_backward must overwrite every entry.
  std::vector<double> grads(params.size(), 7.0);
  const auto loss = [&] { return forward_backward<double>(cfg, emb, params.data(), nullptr, batch, key, ws, nullptr); };
  if (!parallel) {
    EmbeddingGrads<double> eg;
    eg.word.assign(emb.word.size(), 7.0);  // garbage: must be overwritten
    forward_backward<double>(cfg, emb, params.data(), grads.data(), batch, key, ws, nullptr, &eg);
    compare(r, params, grads, loss);
    if (embeddings) {
      compare(*embeddings, emb.word, eg.word, loss);
      compare(*embeddings, emb.position, eg.position, loss);
      compare(*embeddings, emb.token_type, eg.token_type, loss);
      compare(*embeddings, emb.ln_g, eg.ln_g, loss);
      compare(*embeddings, emb.ln_b, eg.ln_b, loss);
    }
    return r;
  }
  // The fp32 path (engine SGEMM with weights packed once per step, vectorized
  // element-wise loops, two text groups) against the double one: max |g32 - g64| / max |g64|.
  {
    Embeddings<float> emb32;
    emb32.vocab = emb.vocab;
    emb32.max_positions = emb.max_positions;
    auto narrow = [](const std::vector<double>& v) { return std::vector<float>(v.begin(), v.end()); };
    emb32.word = narrow(emb.word);
    emb32.position = narrow(emb.position);
    emb32.token_type = narrow(emb.token_type);
    emb32.ln_g = narrow(emb.ln_g);
    emb32.ln_b = narrow(emb.ln_b);
    std::vector<float> params32 = narrow(params), grads32(params.size(), 5.f);
    Workers two(2);
    Workspace<float> ws32;
    EmbeddingGrads<float> eg32;
    EmbeddingGrads<double> eg;
    forward_backward<float>(cfg, emb32, params32.data(), grads32.data(), batch, key, ws32, &two, &eg32);
    forward_backward<double>(cfg, emb, params.data(), grads.data(), batch, key, ws, nullptr, &eg);
    double scale = 0, worst = 0;
    auto widen = [&](const std::vector<float>& g32, const std::vector<double>& g64) {
      for (size_t i = 0; i < g64.size(); ++i) {
        scale = std::max(scale, std::fabs(g64[i]));
        worst = std::max(worst, std::fabs(g32[i] - g64[i]));
      }
    };
    widen(grads32, grads);
    widen(eg32.word, eg.word);
    widen(eg32.position, eg.position);
    widen(eg32.ln_g, eg.ln_g);
    widen(eg32.ln_b, eg.ln_b);
    fp32_error = worst / scale;
  }
  // The batch split across three threads (three text groups, gradients summed) against one pass.
  r.name = "toy_encoder_data_parallel";
  Workers workers(3);
  std::vector<double> split(params.size(), -3.0);
  EmbeddingGrads<double> eg, eg3;
  forward_backward<double>(cfg, emb, params.data(), grads.data(), batch, key, ws, nullptr, &eg);
  Workspace<double> ws3;
  forward_backward<double>(cfg, emb, params.data(), split.data(), batch, key, ws3, &workers, &eg3);
  auto agree = [&](const std::vector<double>& one, const std::vector<double>& three) {
    for (size_t i = 0; i < one.size(); ++i) {
      const double denom = std::max({std::fabs(one[i]), std::fabs(three[i]), kGradFloor});
      r.max_rel_error = std::max(r.max_rel_error, std::fabs(one[i] - three[i]) / denom);
      ++r.compared;
    }
  };
  agree(grads, split);
  agree(eg.word, eg3.word);
  agree(eg.position, eg3.position);
  agree(eg.ln_g, eg3.ln_g);
  agree(eg.ln_b, eg3.ln_b);
  return r;
}

}  // namespace

std::vector<GradCheck> run_gradient_checks() {
  double fp32_error = 0;
  GradCheck embeddings{"toy_encoder_embeddings", 0, 0};
  std::vector<GradCheck> out = {check_linear(),
                                check_layer_norm(),
                                check_gelu(),
                                check_attention(),
                                check_pool_normalize_loss(false),
                                check_gemm_fp32(),
                                check_gelu_fp32(),
                                check_attention_fp32(),
                                check_whole_model(false, fp32_error, &embeddings)};
  out.push_back(check_attention_kept());
  out.push_back(check_attention(true));
  out.push_back(check_pool_normalize_loss(true));
  out.push_back(embeddings);
  out.push_back(check_whole_model(true, fp32_error));
  out.push_back({"toy_encoder_fp32_vs_double", fp32_error, static_cast<int64_t>(out.back().compared)});
  for (GradCheck& c : lora_gradient_checks()) out.push_back(std::move(c));
  for (GradCheck& c : head_gradient_checks()) out.push_back(std::move(c));
  return out;
}

std::map<std::string, io::StoredTensor> toy_checkpoint(const EncoderConfig& cfg, uint64_t seed) {
  Rand rng{seed};
  std::map<std::string, io::StoredTensor> out;
  auto put = [&](const std::string& name, std::vector<int64_t> shape, double scale, double shift) {
    io::StoredTensor t;
    t.dtype = "F32";
    t.shape = std::move(shape);
    std::vector<float> v(t.elements());
    for (float& x : v) x = static_cast<float>(rng.next(scale) + shift);
    t.bytes.resize(v.size() * 4);
    std::memcpy(t.bytes.data(), v.data(), t.bytes.size());
    out[name] = std::move(t);
  };
  const int64_t h = cfg.hidden;
  put("embeddings.word_embeddings.weight", {cfg.vocab, h}, 1.0, 0);
  put("embeddings.position_embeddings.weight", {cfg.max_positions, h}, 0.3, 0);
  put("embeddings.token_type_embeddings.weight", {cfg.type_vocab, h}, 0.1, 0);
  put("embeddings.LayerNorm.weight", {h}, 0.1, 1);
  put("embeddings.LayerNorm.bias", {h}, 0.1, 0);
  for (const ParamTensor& p : param_tensors(cfg)) {
    const bool ln = p.name.find("LayerNorm") != std::string::npos;
    const bool is_weight = p.name.size() > 6 && p.name.compare(p.name.size() - 6, 6, "weight") == 0;
    put(p.name, p.shape, ln ? 0.1 : 0.3, ln && is_weight ? 1 : 0);
  }
  return out;
}

EncoderConfig toy_config(int hidden, int heads, int intermediate, int max_positions) {
  EncoderConfig cfg;
  cfg.layers = 2;
  cfg.hidden = hidden;
  cfg.heads = heads;
  cfg.intermediate = intermediate;
  cfg.vocab = 50;
  cfg.max_positions = max_positions;
  return cfg;
}

std::vector<double> toy_step_losses(const EncoderConfig& cfg, const TrainerOptions& o, uint64_t checkpoint_seed,
                                    const std::vector<int32_t>& lengths, int id_mult, int id_add, int steps) {
  if (lengths.size() != 6) throw std::invalid_argument("toy_step_losses takes six texts");
  Trainer trainer(cfg, toy_checkpoint(cfg, checkpoint_seed), o);
  std::vector<int32_t> ids;
  for (int32_t n : lengths)
    for (int i = 0; i < n; ++i) ids.push_back(static_cast<int32_t>((ids.size() * id_mult + id_add) % cfg.vocab));
  const std::vector<int32_t> pa = {0, 1, 2, 3, 4, 0}, pb = {1, 2, 3, 4, 5, 5};
  const std::vector<float> labels = {1, 0, 1, 0, 1, 0};
  PairBatch b{ids.data(), lengths.data(), 6, pa.data(), pb.data(), labels.data(), 6};
  std::vector<double> losses;
  for (int s = 0; s < steps; ++s) losses.push_back(trainer.step(b).loss);
  return losses;
}

}  // namespace svc::train
