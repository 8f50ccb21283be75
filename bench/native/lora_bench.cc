// The LoRA path of adapter training on svc-small's shapes (rank 8 on the six linear layers of
// each of 6 layers: query, key and value 384 -> 384 into a fused row of 1152, attention output
// 384 -> 384, FFN 384 -> 1536 -> 384), forward and backward over `rows` tokens (a text group's
// share of a step: about 160 on UCI sentences, 2,000 on e-mails), one thread:
//   cmake -S . -B build-native -DSVC_NATIVE_TESTS=ON && cmake --build build-native --target lora_bench
//   SVC_ISA=avx2 build-native/lora_bench [rows=160] [reps=30]
// Peer: the same products through the training core's gemm() (packed GEMM, n = rank), as
// lora_forward / lora_backward ran them before the row kernels (native/core/train/lora_kernels.h).
// Each keeps its best CPU time over the repetitions (a shared machine only slows a run down).
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <random>
#include <vector>

#include "train/ops.h"

namespace {

using svc::train::gemm;

double cpu_ms() {
  timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec * 1e-6;
}

void gemm_forward(int rows, int in, int out, int rank, float scale, const float* x, const float* a, const float* b,
                  float* u, float* y, int ldy) {
  gemm<float>(false, true, rows, rank, in, x, in, a, in, 0.f, u, rank, nullptr);
  for (int64_t i = 0; i < static_cast<int64_t>(rows) * rank; ++i) u[i] *= scale;
  gemm<float>(false, true, rows, out, rank, u, rank, b, rank, 1.f, y, ldy, nullptr);
}

void gemm_backward(int rows, int in, int out, int rank, float scale, const float* x, const float* a, const float* b,
                   const float* u, const float* dy, int ldy, float* dx, float* da, float* db, float* g) {
  gemm<float>(true, false, out, rank, rows, dy, ldy, u, rank, 0.f, db, rank, nullptr);
  gemm<float>(false, false, rows, rank, out, dy, ldy, b, rank, 0.f, g, rank, nullptr);
  for (int64_t i = 0; i < static_cast<int64_t>(rows) * rank; ++i) g[i] *= scale;
  gemm<float>(true, false, rank, in, rows, g, rank, x, in, 0.f, da, in, nullptr);
  gemm<float>(false, false, rows, in, rank, g, rank, a, in, 1.f, dx, in, nullptr);
}

struct Target {
  int in, out, ldy;
};

}  // namespace

int main(int argc, char** argv) {
  const int rows = argc > 1 ? std::atoi(argv[1]) : 160;
  const int reps = argc > 2 ? std::atoi(argv[2]) : 30;
  const int rank = 8, layers = 6;
  const float scale = 2.f;
  const Target targets[] = {{384, 384, 1152}, {384, 384, 1152},  {384, 384, 1152},
                            {384, 384, 384},  {384, 1536, 1536}, {1536, 384, 384}};
  std::mt19937 rng(1);
  std::uniform_real_distribution<float> uniform(-1.f, 1.f);
  auto random = [&](size_t n) {
    std::vector<float> v(n);
    for (float& e : v) e = uniform(rng);
    return v;
  };
  std::vector<float> x = random(rows * 1536), y = random(rows * 1536), dy = random(rows * 1536),
                     dx = random(rows * 1536), a = random(rank * 1536), b = random(1536 * rank);
  std::vector<float> u(rows * rank), g(rows * rank), da(rank * 1536), db(1536 * rank);
  double best[2][2] = {{1e30, 1e30}, {1e30, 1e30}};  // [gemm, rows][forward, backward]
  for (int rep = 0; rep < reps; ++rep)
    for (int impl = 0; impl < 2; ++impl) {
      const double t0 = cpu_ms();
      for (int l = 0; l < layers; ++l)
        for (const Target& t : targets) {
          if (impl)
            svc::train::lora_forward<float>(rows, t.in, t.out, rank, scale, x.data(), a.data(), b.data(), u.data(),
                                            y.data(), t.ldy, nullptr);
          else
            gemm_forward(rows, t.in, t.out, rank, scale, x.data(), a.data(), b.data(), u.data(), y.data(), t.ldy);
        }
      const double t1 = cpu_ms();
      for (int l = 0; l < layers; ++l)
        for (const Target& t : targets) {
          if (impl)
            svc::train::lora_backward<float>(rows, t.in, t.out, rank, scale, x.data(), a.data(), b.data(), u.data(),
                                             dy.data(), t.ldy, dx.data(), da.data(), db.data(), g.data(), nullptr);
          else
            gemm_backward(rows, t.in, t.out, rank, scale, x.data(), a.data(), b.data(), u.data(), dy.data(), t.ldy,
                          dx.data(), da.data(), db.data(), g.data());
        }
      const double t2 = cpu_ms();
      best[impl][0] = std::min(best[impl][0], t1 - t0);
      best[impl][1] = std::min(best[impl][1], t2 - t1);
    }
  std::printf("LoRA path, rank 8 on 6 x 6 layers, %d rows, 1 thread, best of %d (CPU ms)\n", rows, reps);
  std::printf("%-22s %9s %9s %9s\n", "", "forward", "backward", "total");
  std::printf("%-22s %9.2f %9.2f %9.2f\n", "gemm() (peer)", best[0][0], best[0][1], best[0][0] + best[0][1]);
  std::printf("%-22s %9.2f %9.2f %9.2f\n", "row kernels", best[1][0], best[1][1], best[1][0] + best[1][1]);
  std::printf("%-22s %9.2f %9.2f %9.2f\n", "ratio", best[1][0] / best[0][0], best[1][1] / best[0][1],
              (best[1][0] + best[1][1]) / (best[0][0] + best[0][1]));
  return 0;
}
