// Where an encoder layer's time goes, op by op, fp32 against int8 at the kernel level SVC_ISA
// allows: svc-small's shapes (hidden 384, FFN 1536, 12 heads) on one packed batch, by default
// 32 texts of UCI sentence lengths (8 to 29 tokens, 581 in all); `140-256 8` gives 8 texts of
// e-mail lengths (cut at 256 tokens). Weights are random: the time of these kernels does not
// depend on the values. Built with the C++ tests:
//   cmake -S . -B build-native -DSVC_NATIVE_TESTS=ON && cmake --build build-native --target layer_bench
//   SVC_ISA=avx2 build-native/layer_bench [reps=40] [threads=1] [lengths=8-29] [texts=32] [bias=0]
// bias=1 gives attention MPNet's relative position bias (a random table), as an MPNet base runs it.
// Each op keeps its best time over the repetitions (a shared machine only ever slows a run
// down). The ops are those the encoder runs, fused as it fuses them.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <random>
#include <vector>

#include "cpu_features.h"
#include "encoder/relative_position.h"
#include "kernels/gemm.h"
#include "kernels/ops.h"
#include "kernels/qgemm.h"
#include "thread_pool.h"

namespace {

using svc::Epilogue;

// With one thread the clock is the process's CPU time: on a shared machine a run that is
// preempted in the middle of an op does not count the time it waited (only its cache
// disturbance). With more threads it is the wall clock, since helpers may sit idle.
bool cpu_clock = false;
double now_ms() {
  if (cpu_clock) {
    timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec * 1e-6;
  }
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// kInterAlone (the FFN-in GEMM without its GELU epilogue) is printed apart, not summed.
enum Op { kQkv, kAttention, kQuantize, kAttnOut, kInter, kOut, kOps, kInterAlone = kOps };
const char* const kNames[kOps + 1] = {"QKV GEMM",
                                      "attention",
                                      "quantize attention's output",
                                      "attention-out GEMM (+ residual, layer norm)",
                                      "FFN-in GEMM + GELU",
                                      "FFN-out GEMM (+ residual, layer norm)",
                                      "FFN-in GEMM without GELU"};

}  // namespace

int main(int argc, char** argv) {
  constexpr int H = 384, I = 1536, kHeads = 12, dh = 32;
  const int reps = argc > 1 ? std::atoi(argv[1]) : 40;
  svc::ThreadPool pool(argc > 2 ? std::atoi(argv[2]) : 1);
  int min_len = 8, max_len = 29;
  if (argc > 3 && (std::sscanf(argv[3], "%d-%d", &min_len, &max_len) != 2 || min_len < 1 || max_len > 512 ||
                   min_len > max_len)) {
    std::fprintf(stderr, "lengths must read MIN-MAX within 1-512, got %s\n", argv[3]);
    return 2;
  }
  cpu_clock = pool.size() == 1;
  const int texts = argc > 4 ? std::max(1, std::atoi(argv[4])) : 32;
  const bool biased = argc > 5 && std::atoi(argv[5]) != 0;
  std::mt19937 rng(1);
  std::normal_distribution<float> normal(0, 1);
  std::uniform_int_distribution<int> length(min_len, max_len);
  std::vector<int64_t> offsets{0};
  for (int t = 0; t < texts; ++t) offsets.push_back(offsets.back() + length(rng));
  const int64_t M = offsets.back();
  auto random = [&](std::size_t n, float scale) {
    std::vector<float> v(n);
    for (float& x : v) x = scale * normal(rng);
    return v;
  };
  struct Layer {
    int n = 0, k = 0;
    std::vector<float> w, b;
    svc::PackedF32 f32;
    svc::PackedS8 s8;
  };
  // QKV, attention out, FFN in, FFN out.
  Layer layers[4];
  const int shapes[4][2] = {{3 * H, H}, {H, H}, {I, H}, {H, I}};
  for (int i = 0; i < 4; ++i) {
    Layer& l = layers[i];
    l.n = shapes[i][0];
    l.k = shapes[i][1];
    l.w = random(static_cast<std::size_t>(l.n) * l.k, 0.05f);
    l.b = random(l.n, 0.1f);
    l.f32 = svc::pack_f32(l.w.data(), l.b.data(), l.n, l.k);
    l.s8 = svc::pack_s8(l.w.data(), l.b.data(), l.n, l.k, svc::qgemm_weight_max());
  }
  const std::vector<float> gamma = random(H, 1), beta = random(H, 0.1f);
  std::vector<float> x = random(M * H, 1), tmp = random(M * H, 1), ctx = random(M * H, 1),
                     qkv = random(M * 3 * H, 1), inter = random(M * I, 1);
  // As the encoder builds it: each head's bias once, for the longest text.
  const int64_t bias_per_head = svc::position_bias_floats(max_len);
  std::vector<float> bias_table = random(static_cast<std::size_t>(svc::kMpnetBuckets) * kHeads, 1);
  std::vector<float> bias(static_cast<std::size_t>(kHeads * bias_per_head));
  for (int head = 0; head < kHeads; ++head)
    svc::mpnet_position_bias(bias_table.data(), kHeads, head, max_len, bias.data() + head * bias_per_head);
  const int64_t scratch_per_thread = svc::attention_scratch_floats(max_len, dh);
  svc::AlignedBuffer<float> packed_a, scratch(static_cast<std::size_t>(scratch_per_thread) * pool.size());
  svc::QuantizedRows qx, qctx, qtmp, qinter;

  std::printf("kernel level %s, %lld tokens in %d texts (%d-%d), %d thread(s), %s ms per layer, best of %d%s\n",
              svc::cpu_level_name(), static_cast<long long>(M), texts, min_len, max_len, pool.size(),
              cpu_clock ? "CPU" : "wall", reps, biased ? ", MPNet's position bias" : "");
  std::printf("| op | fp32 | int8 |\n|---|---:|---:|\n");
  double best[2][kOps + 1];
  for (int int8 = 0; int8 < 2; ++int8) {
    std::fill(best[int8], best[int8] + kOps + 1, 1e30);
    for (int rep = 0; rep <= reps; ++rep) {  // the first round warms up
      double t[kOps + 1] = {0};
      // As the encoder runs a layer: the int8 GEMMs take their input quantized by the GEMM that
      // wrote it (c_quantized), except attention's output, quantized in a pass of its own; the
      // layer norms run in the GEMMs that feed them.
      auto gemm = [&](Op op, const Layer& l, const float* a, const svc::QuantizedRows& qa, float* c,
                      const float* residual, Epilogue ep, bool layer_norm, svc::QuantizedRows* qc) {
        svc::GemmArgs args;
        args.a = a;
        args.lda = l.k;
        args.m = M;
        args.c = c;
        args.ldc = l.n;
        args.residual = residual;
        args.epilogue = ep;
        if (layer_norm) {
          args.ln_gamma = gamma.data();
          args.ln_beta = beta.data();
          args.ln_eps = 1e-12f;
        }
        const double t0 = now_ms();
        if (int8) svc::gemm_s8(qa, args, l.s8, &pool, qc);
        else svc::gemm_f32(args, l.f32, packed_a, &pool);
        t[op] += now_ms() - t0;
      };
      if (rep == 0 && int8) svc::quantize_rows(x.data(), H, M, H, qx, &pool);  // the previous layer's output
      gemm(kQkv, layers[0], x.data(), qx, qkv.data(), nullptr, Epilogue::kNone, false, nullptr);
      const auto attention = int8 ? svc::ops().attention_head_s8 : svc::ops().attention_head;
      double t0 = now_ms();
      pool.run(texts * kHeads, [&](int64_t task, int thread) {
        const int64_t text = task / kHeads, row0 = offsets[text];
        const float* q = qkv.data() + row0 * 3 * H + (task % kHeads) * dh;
        const int len = static_cast<int>(offsets[text + 1] - row0);
        const float* head_bias = biased ? bias.data() + (task % kHeads) * bias_per_head + (max_len - len) : nullptr;
        attention(q, q + H, q + 2 * H, 3 * H, len, dh, 0.17677669f, head_bias,
                  ctx.data() + row0 * H + (task % kHeads) * dh, H, scratch.data() + thread * scratch_per_thread);
      });
      t[kAttention] = now_ms() - t0;
      if (int8) {
        t0 = now_ms();
        svc::quantize_rows(ctx.data(), H, M, H, qctx, &pool);
        t[kQuantize] = now_ms() - t0;
      }
      gemm(kAttnOut, layers[1], ctx.data(), qctx, tmp.data(), x.data(), Epilogue::kNone, true, &qtmp);
      // GELU is the FFN-in GEMM's epilogue: the GEMM also runs without it, for comparison.
      gemm(kInterAlone, layers[2], tmp.data(), qtmp, inter.data(), nullptr, Epilogue::kNone, false, &qinter);
      gemm(kInter, layers[2], tmp.data(), qtmp, inter.data(), nullptr, int8 ? Epilogue::kGeluCoarse : Epilogue::kGelu,
           false, &qinter);
      gemm(kOut, layers[3], inter.data(), qinter, x.data(), tmp.data(), Epilogue::kNone, true, &qx);
      if (rep == 0) continue;
      for (int op = 0; op <= kOps; ++op) best[int8][op] = std::min(best[int8][op], t[op]);
    }
  }
  double total[2] = {0, 0};
  for (int op = 0; op < kOps; ++op) {
    std::printf("| %s | %.2f | %.2f |\n", kNames[op], best[0][op], best[1][op]);
    for (int p = 0; p < 2; ++p) total[p] += best[p][op];
  }
  std::printf("| sum | %.2f | %.2f |\n| (%s) | %.2f | %.2f |\n", total[0], total[1], kNames[kInterAlone],
              best[0][kInterAlone], best[1][kInterAlone]);
  const double gemms[2] = {best[0][kQkv] + best[0][kAttnOut] + best[0][kInterAlone] + best[0][kOut],
                           best[1][kQkv] + best[1][kAttnOut] + best[1][kInterAlone] + best[1][kOut]};
  std::printf("int8 is %.2fx fp32 over the layer, %.2fx over its four GEMMs (%.2f of the fp32 layer is not GEMM)\n",
              total[0] / total[1], gemms[0] / gemms[1], 1 - gemms[0] / total[0]);
}
