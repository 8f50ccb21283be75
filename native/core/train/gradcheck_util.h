// What the gradient checks share: deterministic random values, the finite-difference
// comparison, and the two-layer toy encoder the whole-model checks differentiate.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <vector>

#include "train/gradcheck.h"
#include "train/model.h"
#include "train/rng.h"

namespace svc::train::check {

// Deterministic values in [-scale, scale).
struct Rand {
  uint64_t state;
  double next(double scale = 1.0) {
    return scale * (static_cast<double>(mix64(state++) >> 11) * (2.0 / 9007199254740992.0) - 1.0);
  }
  std::vector<double> vec(size_t n, double scale = 1.0) {
    std::vector<double> v(n);
    for (double& x : v) x = next(scale);
    return v;
  }
};

inline double dot(const std::vector<double>& a, const std::vector<double>& b) {
  double s = 0;
  for (size_t i = 0; i < a.size(); ++i) s += a[i] * b[i];
  return s;
}

// Below this magnitude a gradient is compared on an absolute scale: the key
// biases' gradient is exactly zero (softmax ignores a constant added to a row)
// and central differences of an O(1) loss carry ~1e-11 of rounding noise.
constexpr double kGradFloor = 1e-6;

// Compares analytic gradients of f with respect to x against (f(x+h) - f(x-h)) / 2h.
inline void compare(GradCheck& out, std::vector<double>& x, const std::vector<double>& analytic,
                    const std::function<double()>& f, double h = 1e-4) {
  for (size_t i = 0; i < x.size(); ++i) {
    const double keep = x[i];
    x[i] = keep + h;
    const double up = f();
    x[i] = keep - h;
    const double down = f();
    x[i] = keep;
    const double numeric = (up - down) / (2 * h);
    const double denom = std::max({std::fabs(analytic[i]), std::fabs(numeric), kGradFloor});
    if (std::getenv("SVC_GRADCHECK_DEBUG") && std::fabs(analytic[i] - numeric) / denom > 1e-5)
      std::fprintf(stderr, "%s[%zu]: analytic %.10e numeric %.10e\n", out.name.c_str(), i, analytic[i], numeric);
    out.max_rel_error = std::max(out.max_rel_error, std::fabs(analytic[i] - numeric) / denom);
    ++out.compared;
  }
}

// A two-layer toy encoder (hidden 8, two heads, FFN 16, dropout 0.1) in double, with a
// batch of four texts and four pairs over them. Not copyable: the batch points into it.
struct ToyEncoder {
  EncoderConfig cfg;
  Embeddings<double> emb;
  std::vector<double> params;
  std::vector<int32_t> lengths = {3, 5, 2, 4}, ids, pa = {0, 2, 0, 1}, pb = {1, 3, 3, 2};
  std::vector<float> labels = {1, 0, 0, 1};
  PairBatch batch;
  Rand rng{7};

  ToyEncoder() {
    cfg.layers = 2;
    cfg.hidden = 8;
    cfg.heads = 2;
    cfg.intermediate = 16;
    cfg.dropout = 0.1;
    const int vocab = 20, max_positions = 16;
    emb.vocab = vocab;
    emb.max_positions = max_positions;
    emb.word = rng.vec(static_cast<size_t>(vocab) * cfg.hidden);
    emb.position = rng.vec(static_cast<size_t>(max_positions) * cfg.hidden, 0.3);
    emb.token_type = rng.vec(cfg.hidden, 0.1);
    emb.ln_g = rng.vec(cfg.hidden, 0.2);
    for (double& g : emb.ln_g) g += 1;
    emb.ln_b = rng.vec(cfg.hidden, 0.1);
    params = rng.vec(param_count(cfg), 0.5);
    for (int l = 0; l < cfg.layers; ++l) {
      const LayerOffsets o = layer_offsets(cfg, l);
      for (int j = 0; j < cfg.hidden; ++j) {
        params[o.ln1_g + j] += 1;
        params[o.ln2_g + j] += 1;
      }
    }
    for (int32_t n : lengths)
      for (int i = 0; i < n; ++i) ids.push_back(static_cast<int32_t>(mix64(ids.size() + 99) % vocab));
    batch = PairBatch{ids.data(), lengths.data(), 4, pa.data(), pb.data(), labels.data(), 4};
  }
  ToyEncoder(const ToyEncoder&) = delete;
};

}  // namespace svc::train::check
