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
#include <cmath>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "cpu_features.h"
#include "kernels/ops.h"

namespace {

int failures = 0;
int compared = 0;
// Outputs are averages of V entries of size ~1; scores of size ~10 put fp32 rounding of the
// scores (another summation order) at a few 1e-6 of the probabilities.
constexpr float kTolerance = 1e-5f;

struct Inputs {
  int len, dh, hidden;
  std::vector<float> qkv;  // [len x 3 * hidden]
};

Inputs make_inputs(int len, int dh, std::mt19937& rng) {
  std::normal_distribution<float> normal(0.0f, 1.0f);
  Inputs in{len, dh, 2 * dh, {}};
  in.qkv.resize(static_cast<std::size_t>(len) * 3 * in.hidden);
  // Q and K at 1.5 standard deviations: scores of standard deviation ~2 and up to ~10, peaked
  // softmax rows (as trained heads have) next to flat ones.
  for (std::size_t i = 0; i < in.qkv.size(); ++i) {
    const std::size_t col = i % (3 * in.hidden);
    in.qkv[i] = normal(rng) * (col < 2 * static_cast<std::size_t>(in.hidden) ? 1.5f : 1.0f);
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
                     1.0f / std::sqrt(static_cast<float>(in.dh)), out.data() + in.dh, ldo, scratch.data());
  return out;
}

void compare(const char* level, const svc::OpsTable& ops) {
  std::mt19937 rng(11);
  for (int dh : {32, 64}) {
    for (int len : {1, 7, 16, 17, 255, 256, 512}) {
      const Inputs in = make_inputs(len, dh, rng);
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
        for (int d = 0; d < dh; ++d) untouched = untouched && got[static_cast<std::size_t>(i) * in.hidden + d] == -7.0f;
      if (!(worst <= kTolerance) || !untouched) {
        std::fprintf(stderr, "FAIL: %s dh=%d len=%d: out[%zu][%zu] = %.9g, plain loop %.9g%s\n", level, dh, len,
                     at / in.hidden, at % in.hidden, got[at], want[at],
                     untouched ? "" : " (wrote outside its head)");
        ++failures;
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
    compare("avx2", svc::detail::ops_avx2());
    ran.push_back("avx2");
  }
  if (f.avx512) {
    compare("avx512", svc::detail::ops_avx512());
    ran.push_back("avx512");
  }
#endif
  // The scalar level against itself still runs every length through the sanitizers.
  compare("scalar", svc::detail::ops_scalar());
  ran.push_back("scalar");
  std::string levels;
  for (const std::string& l : ran) levels += (levels.empty() ? "" : ", ") + l;
  std::printf("attention_test: %d comparisons against the plain loop (%s), %d failures\n", compared, levels.c_str(),
              failures);
  return failures == 0 ? 0 : 1;
}
