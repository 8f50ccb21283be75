// Kernel choice by measurement. Where more than one kernel can run a linear layer's product (fp32, bf16 with
// vdpbf16ps, bf16 on AMX tiles), measure_linear_kernels times each one this CPU allows (after SVC_ISA's cap) on a
// representative shape, interleaved, and checks its output against fp32. Which one to use is decided above the core
// (src/native/kernel-choice.ts, which also caches the result per CPU model); the core only measures and obeys
// set_bf16_kernel. Measured, not assumed: on one Intel Xeon vdpbf16ps ran 0.7x fp32, on an AMD Zen 4 1.7-1.9x.
#pragma once

#include <string>
#include <vector>

namespace svc {

// Which bf16 kernel gemm_bf16 runs on a CPU that has both. Until something sets it: AMX where the CPU has it.
// kEmulated (SVC_KERNEL=bf16-emulated, gemm_bf16.h) runs bf16's arithmetic with fp32 instructions on any CPU.
enum class Bf16Kernel { kAmx, kVector, kEmulated };
void set_bf16_kernel(Bf16Kernel kernel);
Bf16Kernel bf16_kernel();

struct KernelMeasurement {
  std::string name;  // "fp32", "bf16-vector" or "bf16-amx"
  double gflops;     // best round's rate (2·m·n·k / seconds / 1e9)
  // ||C - C_fp32|| / ||C_fp32|| over the whole product (0 for fp32 itself): the product's own rounding, which a
  // correct bf16 kernel keeps near 2⁻⁹ and never above 2⁻⁷ (kernels/gemm_bf16.h).
  double rel_error;
  int rounds;  // timed runs behind gflops
};

// The linear layer shape timed: rows (tokens of a batch) x the FFN's input and output widths of svc-small.
struct MeasureShape {
  int m = 256;
  int k = 384;
  int n = 1536;
};

// Times every candidate this CPU allows (fp32 always) on `threads` threads, rounds interleaved so a busy machine
// slows them alike, until each has at least 2 rounds and about budget_ms is spent (at most 12 rounds each).
std::vector<KernelMeasurement> measure_linear_kernels(int threads, double budget_ms, MeasureShape shape = {});

}  // namespace svc
