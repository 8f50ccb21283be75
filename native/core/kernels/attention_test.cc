// Standalone test of the fused attention kernels, without Node:
//   cmake -S . -B build-native -DSVC_NATIVE_TESTS=ON && cmake --build build-native -j2 --target attention_test
//   build-native/attention_test
// Each vector level's attention_head (AVX2, AVX-512, as far as this CPU runs them) against the
// scalar level's plain loop on the same random inputs, at lengths that leave every tail: one
// token, less than a vector, exactly one and one past a vector, around the 256-token cut and
// the 512-position limit, for MiniLM's head size 32 and BERT-base's 64. Q, K and V sit in one
// [len x 3H] matrix as the encoder's fused projection leaves them, and every buffer has exactly
// the size the contract allows, so the sanitizer build (.ci/sanitizers) sees any stray access.
// The sums run in another order (blocked, FMA), so values agree to a tolerance, not bit for bit.
// Then each level's int8 attention (attention_head_s8) at the same lengths, against exact
// attention within the error its rounding steps predict (see exact_s8), and the AVX2 int8
// kernel against its plain-loop reference. Every case runs twice: plain, and with an MPNet-style
// position bias (random values, in the exact buffer size the kernels may read); the plain loop
// itself is held to exact attention in double, bias included.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "cpu_features.h"
#include "test_check.h"
#include "encoder/relative_position.h"
#include "kernels/ops.h"

namespace {

using svc::test::failures;
int compared = 0;
// Outputs are averages of V entries of size ~1; scores of size ~10 put fp32 rounding of the
// scores (another summation order) at a few 1e-6 of the probabilities.
constexpr float kTolerance = 1e-5f;

struct Inputs {
  int len, dh, hidden;
  std::vector<float> qkv;   // [len x 3 * hidden]
  std::vector<float> bias;  // empty, or position_bias_floats(len): a bias of up to ~2 per distance
  const float* position_bias() const { return bias.empty() ? nullptr : bias.data(); }
};

Inputs make_inputs(int len, int dh, std::mt19937& rng, bool biased) {
  std::normal_distribution<float> normal(0.0f, 1.0f);
  Inputs in{len, dh, 2 * dh, {}};
  in.qkv.resize(static_cast<std::size_t>(len) * 3 * in.hidden);
  // Q and K at 1.5 standard deviations: scores of standard deviation ~2 and up to ~10, peaked
  // softmax rows (as trained heads have) next to flat ones.
  for (std::size_t i = 0; i < in.qkv.size(); ++i) {
    const std::size_t col = i % (3 * in.hidden);
    in.qkv[i] = normal(rng) * (col < 2 * static_cast<std::size_t>(in.hidden) ? 1.5f : 1.0f);
  }
  if (biased) {
    in.bias.assign(static_cast<std::size_t>(svc::position_bias_floats(len)), 0.0f);
    for (int t = 0; t < 2 * len - 1; ++t) in.bias[t] = normal(rng);
  }
  return in;
}

// The second head of the text: its columns start at dh inside each of Q, K and V, so the last
// row's V ends exactly at the end of the buffer.
std::vector<float> run(const svc::OpsTable& ops, const Inputs& in) {
  const int ldo = in.hidden;
  std::vector<float> out(static_cast<std::size_t>(in.len) * ldo, -7.0f);
  std::vector<float> scratch(static_cast<std::size_t>(svc::attention_scratch_floats(in.len, in.dh)));
  const float* q = in.qkv.data() + in.dh;
  ops.attention_head(q, q + in.hidden, q + 2 * in.hidden, 3 * in.hidden, in.len, in.dh,
                     1.0f / std::sqrt(static_cast<float>(in.dh)), in.position_bias(), out.data() + in.dh, ldo,
                     scratch.data());
  return out;
}

void compare(const char* level, const svc::OpsTable& ops) {
  std::mt19937 rng(11);
  for (int dh : {32, 64}) {
    for (int len : {1, 7, 16, 17, 255, 256, 512}) {
      for (bool biased : {false, true}) {
        const Inputs in = make_inputs(len, dh, rng, biased);
        const std::vector<float> want = run(svc::detail::ops_scalar(), in);
        const std::vector<float> got = run(ops, in);
        ++compared;
        float worst = 0;
        std::size_t at = 0;
        for (std::size_t i = 0; i < want.size(); ++i) {
          const float err = std::fabs(got[i] - want[i]);
          if (!(err <= worst)) {  // also catches NaN
            worst = err;
            at = i;
          }
        }
        // The first head's columns must be left as they were.
        bool untouched = true;
        for (int i = 0; i < len; ++i)
          for (int d = 0; d < dh; ++d)
            untouched = untouched && got[static_cast<std::size_t>(i) * in.hidden + d] == -7.0f;
        if (!(worst <= kTolerance) || !untouched) {
          std::fprintf(stderr, "FAIL: %s dh=%d len=%d: out[%zu][%zu] = %.9g, plain loop %.9g%s\n", level, dh, len,
                       at / in.hidden, at % in.hidden, got[at], want[at], untouched ? "" : " (wrote outside its head)");
          ++failures;
        }
      }
    }
  }
}

// int8 attention (attention_s8_impl.h) against exact attention, computed here in double. Its
// error comes from rounding Q, K, V and the softmax numerators to their steps (s_q = max|q_i| /
// 127 per query, s_k = max|k_j| / 63 per key, s_v = max_j |v_jd| / 63 per column, 1 / 255 of the
// row's largest numerator): each rounding error lies within half a step and, as the inputs are
// random, behaves as uniform and independent (variance step^2 / 12). To first order an output's
// error is a weighted sum of them, whose standard deviation sigma this computes from the case's
// own steps; an output may be off by 6 sigma (a chance below 1e-8 each under that model) plus
// the fp32 tolerance. Rows are sampled on long texts (every 31st and the last) to keep the
// sanitizer build quick.
struct Exact {
  std::vector<double> out, sigma;  // [len x dh] of the second head; sigma < 0: row not checked
};

Exact exact_s8(const Inputs& in) {
  const int len = in.len, dh = in.dh, ld = 3 * in.hidden;
  const double scale = 1.0 / std::sqrt(static_cast<double>(dh));
  auto at = [&](int part, int row, int d) { return static_cast<double>(in.qkv[row * ld + part * in.hidden + dh + d]); };
  std::vector<double> sk(len), sv(dh, 0.0);
  for (int j = 0; j < len; ++j) {
    double m = 0;
    for (int d = 0; d < dh; ++d) m = std::max(m, std::fabs(at(1, j, d)));
    sk[j] = m / 63;
  }
  for (int d = 0; d < dh; ++d)
    for (int j = 0; j < len; ++j) sv[d] = std::max(sv[d], std::fabs(at(2, j, d)) / 63);
  Exact e{std::vector<double>(static_cast<std::size_t>(len) * dh),
          std::vector<double>(static_cast<std::size_t>(len) * dh, -1)};
  std::vector<double> w(len);
  for (int i = 0; i < len; ++i) {
    double mx = -1e300, qmax = 0, qnorm2 = 0;
    for (int d = 0; d < dh; ++d) {
      qmax = std::max(qmax, std::fabs(at(0, i, d)));
      qnorm2 += at(0, i, d) * at(0, i, d);
    }
    for (int j = 0; j < len; ++j) {
      double s = 0;
      for (int d = 0; d < dh; ++d) s += at(0, i, d) * at(1, j, d);
      w[j] = s * scale + (in.bias.empty() ? 0.0 : in.bias[i - j + len - 1]);
      mx = std::max(mx, w[j]);
    }
    double numerators = 0;
    for (int j = 0; j < len; ++j) numerators += (w[j] = std::exp(w[j] - mx));
    for (int j = 0; j < len; ++j) w[j] /= numerators;
    const bool checked = len <= 64 || i % 31 == 0 || i == len - 1;
    const double sq = qmax / 127, p8_total = 255 * numerators;
    for (int d = 0; d < dh; ++d) {
      double o = 0, w2 = 0;
      for (int j = 0; j < len; ++j) {
        o += w[j] * at(2, j, d);
        w2 += w[j] * w[j];
      }
      e.out[static_cast<std::size_t>(i) * dh + d] = o;
      if (!checked) continue;
      // V's rounding, the numerators' rounding, K's rounding (independent per key) and Q's
      // (shared by every score of the row) carried through the softmax: dw_j = w_j (ds_j - sum w ds).
      double var = sv[d] * sv[d] / 12 * w2;
      std::vector<double> through_q(dh, 0.0);
      for (int j = 0; j < len; ++j) {
        const double dv = at(2, j, d) - o;
        var += dv * dv / 12 / (p8_total * p8_total);
        var += w[j] * w[j] * dv * dv * scale * scale * sk[j] * sk[j] / 12 * qnorm2;
        for (int c = 0; c < dh; ++c) through_q[c] += w[j] * dv * at(1, j, c);
      }
      for (int c = 0; c < dh; ++c) var += scale * scale * sq * sq / 12 * through_q[c] * through_q[c];
      e.sigma[static_cast<std::size_t>(i) * dh + d] = std::sqrt(var);
    }
  }
  return e;
}

// The second head's outputs of an attention function, [len x dh].
std::vector<float> head_out(const std::vector<float>& out, const Inputs& in) {
  std::vector<float> h(static_cast<std::size_t>(in.len) * in.dh);
  for (int i = 0; i < in.len; ++i)
    for (int d = 0; d < in.dh; ++d)
      h[static_cast<std::size_t>(i) * in.dh + d] = out[static_cast<std::size_t>(i) * in.hidden + in.dh + d];
  return h;
}

// The plain loop itself (every level's reference) against exact attention in double, with and without
// the position bias: a bias added at the wrong distance or scale would pass the level comparisons above,
// since the plain loop would share the mistake.
void check_plain_loop_exact() {
  std::mt19937 rng(17);
  for (int dh : {32, 64}) {
    for (int len : {1, 7, 17, 130}) {
      for (bool biased : {false, true}) {
        const Inputs in = make_inputs(len, dh, rng, biased);
        const std::vector<float> got = head_out(run(svc::detail::ops_scalar(), in), in);
        const Exact exact = exact_s8(in);
        double worst = 0;
        for (std::size_t i = 0; i < got.size(); ++i) worst = std::max(worst, std::fabs(got[i] - exact.out[i]));
        ++compared;
        if (!(worst <= 1e-5)) {
          std::fprintf(stderr, "FAIL: plain loop dh=%d len=%d%s: %.3g from exact attention\n", dh, len,
                       biased ? " with a position bias" : "", worst);
          ++failures;
        }
      }
    }
  }
}

using AttentionFn = void (*)(const float*, const float*, const float*, int64_t, int, int, float, const float*, float*,
                             int64_t, float*);

std::vector<float> run_fn(AttentionFn fn, const Inputs& in) {
  svc::OpsTable table{};
  table.attention_head = fn;
  return run(table, in);
}

// Each level's attention_head_s8 against exact attention within 6 sigma; the int8 kernel of a
// level (AVX2 at head size 32) also against the reference loop: both take the same integer
// sums and float steps, and only their exponentials differ in the last bits, which can move a
// numerator across a rounding boundary by one step. One step on one key moves an output by at
// most 2 max|v| / sum(p8) <= 2 max|v| / 255 (the row's largest numerator alone is 255); the
// test allows two such steps per output.
void compare_s8(const char* level, const svc::OpsTable& ops, bool int8_kernel_at_32) {
  std::mt19937 rng(13);
  for (int dh : {32, 64}) {
    for (int len : {1, 7, 16, 17, 255, 256, 512}) {
      for (bool biased : {false, true}) {
        const Inputs in = make_inputs(len, dh, rng, biased);
        const Exact exact = exact_s8(in);
        const std::vector<float> got_full = run_fn(ops.attention_head_s8, in);
        const std::vector<float> got = head_out(got_full, in);
        const std::vector<float> ref = head_out(run_fn(svc::detail::attention_head_s8_reference, in), in);
        float vmax = 0;
        for (int j = 0; j < len; ++j)
          for (int d = 0; d < dh; ++d)
            vmax =
                std::max(vmax, std::fabs(in.qkv[static_cast<std::size_t>(j) * 3 * in.hidden + 2 * in.hidden + dh + d]));
        const bool against_reference = int8_kernel_at_32 && dh == 32;
        const double step_tolerance = 2 * (2.0 * vmax / 255) + kTolerance;
        for (const auto* which : {&ref, &got}) {
          if (which == &ref && std::string(level) != "scalar") continue;  // the reference once
          ++compared;
          double worst = 0;
          std::size_t at = 0;
          for (std::size_t i = 0; i < which->size(); ++i) {
            if (exact.sigma[i] < 0) continue;
            const double excess = std::fabs((*which)[i] - exact.out[i]) - (6 * exact.sigma[i] + kTolerance);
            if (!(excess <= worst)) {
              worst = excess;
              at = i;
            }
          }
          if (worst > 0) {
            std::fprintf(stderr, "FAIL: int8 %s dh=%d len=%d: out[%zu][%zu] = %.7g, exact %.7g, 6 sigma %.3g\n",
                         which == &ref ? "reference" : level, dh, len, at / dh, at % dh, (*which)[at], exact.out[at],
                         6 * exact.sigma[at]);
            ++failures;
          }
        }
        if (against_reference) {
          ++compared;
          float worst = 0;
          std::size_t at = 0;
          for (std::size_t i = 0; i < got.size(); ++i) {
            const float err = std::fabs(got[i] - ref[i]);
            if (!(err <= worst)) {
              worst = err;
              at = i;
            }
          }
          if (!(worst <= step_tolerance)) {
            std::fprintf(stderr,
                         "FAIL: int8 %s dh=%d len=%d: out[%zu][%zu] = %.7g, reference loop %.7g (allowed %.3g)\n",
                         level, dh, len, at / dh, at % dh, got[at], ref[at], step_tolerance);
            ++failures;
          }
        }
        // The first head's columns must be left as they were.
        for (int i = 0; i < len; ++i)
          for (int d = 0; d < dh; ++d)
            if (got_full[static_cast<std::size_t>(i) * in.hidden + d] != -7.0f) {
              std::fprintf(stderr, "FAIL: int8 %s dh=%d len=%d wrote outside its head\n", level, dh, len);
              ++failures;
              i = len;
              break;
            }
      }
    }
  }
}

}  // namespace

int main() {
  // cpu_features() honours SVC_ISA: a capped run tests only the levels below the cap.
  [[maybe_unused]] const svc::CpuFeatures& f = svc::cpu_features();
  std::vector<std::string> ran;
#if SVC_ARCH_X86
  if (f.avx2) {
    compare("avx2", svc::detail::ops_avx2(false));
    compare_s8("avx2", svc::detail::ops_avx2(false), true);
    ran.push_back("avx2");
  }
  if (f.avx2 && f.avxvnni) {
    compare_s8("avx2-vnni", svc::detail::ops_avx2(true), true);
    ran.push_back("avx2-vnni");
  }
  if (f.avx512) {
    compare("avx512", svc::detail::ops_avx512(false));
    compare_s8("avx512", svc::detail::ops_avx512(false), false);
    ran.push_back("avx512");
  }
  if (f.avx512vnni) {
    compare_s8("avx512-vnni", svc::detail::ops_avx512(true), true);
    ran.push_back("avx512-vnni");
  }
#endif
  // The scalar level against itself still runs every length through the sanitizers.
  check_plain_loop_exact();
  compare("scalar", svc::detail::ops_scalar());
  compare_s8("scalar", svc::detail::ops_scalar(), false);
  ran.push_back("scalar");
  std::string levels;
  for (const std::string& l : ran) levels += (levels.empty() ? "" : ", ") + l;
  std::printf(
      "attention_test: %d comparisons, fp32 against the plain loop and int8 against exact attention (%s), "
      "%d failures\n",
      compared, levels.c_str(), failures);
  return failures == 0 ? 0 : 1;
}
