// Matrix products in bf16 with fp32 accumulation (a training step's, and the encoder's on AMX tiles), for CPUs with
// AVX512_BF16 (vdpbf16ps: 32 bf16 products a register, summed into 16 fp32 lanes,
// twice the multiply-adds of an fp32 FMA). Both operands are rounded to bf16 (round
// to nearest even) as they are packed; the weights stay fp32 masters in the trainer,
// so only the products of a step lose precision, never the updates. Each product's
// relative error is at most 2·2⁻⁸ (two roundings to bf16's 8-bit significand), so
// |C_bf16 - C_fp32| <= 2⁻⁷ · Σ|a·b| plus fp32 summation error.
// Other CPUs (and SVC_ISA=avx512 or lower) keep the fp32 products, unless SVC_KERNEL=bf16-emulated: then every CPU
// runs bf16 products emulated (both operands rounded to bf16 as the hardware rounds them, multiplied and summed in
// fp32 by the fp32 kernels, which is exact per product), slower than fp32 and never picked by measurement. It is
// there so a machine without bf16 can run the test suite with the outputs a bf16 CPU gives (bf16's rounding; the
// order of the sums differs).
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>

#include "kernels/gemm.h"
#include "tensor/aligned_buffer.h"
#include "workers.h"

namespace svc::train {

// Columns per panel of packed B: two AVX-512 registers of fp32 accumulators.
constexpr int kBf16PanelWidth = 32;

// Pairs a panel holds: a whole number of AMX tiles' 16 (gemm_bf16_amx_avx512.cc).
constexpr int kBf16PairBlock = 16;

// op(B) [k x n] as bf16 pairs along k: panel p, pair q holds, for each of its 32 columns j,
// op(B)(2q, 32p+j) then op(B)(2q+1, 32p+j); zero past column n and past row k (odd k), and
// zero pairs from pairs() to padded_pairs().
struct PackedBf16 {
  int n = 0;
  int k = 0;
  AlignedBuffer<uint16_t> data;
  // Emulated bf16 only: the panels widened into the fp32 kernel's, made by the first product that needs them (an
  // encoder's weights are packed once and multiplied by every batch). Replaced by each pack_b_bf16.
  struct Widened {
    std::once_flag once;
    PackedF32 packed;
  };
  std::shared_ptr<Widened> widened;
  int pairs() const { return (k + 1) / 2; }
  int padded_pairs() const { return (pairs() + kBf16PairBlock - 1) / kBf16PairBlock * kBf16PairBlock; }
};

// True when this CPU runs vdpbf16ps and SVC_ISA does not cap it away. Where it also has AMX
// the products run on its tiles (tdpbf16ps), the same bf16 inputs with fp32 sums.
bool bf16_products();

// True when SVC_KERNEL=bf16-emulated asked for emulated bf16 products (kernels/autotune.h, Bf16Kernel::kEmulated).
bool bf16_emulated();

// Only when bf16_products().
void pack_b_bf16(bool trans_b, const float* b, int ldb, int k, int n, PackedBf16& out, Workers* workers);

// C = beta*C + op(A)·op(B), beta 0 or 1, with op(B) packed by pack_b_bf16; op(A) is m x k.
// Only when bf16_products(). Each element is summed over k in one fixed order.
void gemm_bf16(bool trans_a, int m, const float* a, int lda, const PackedBf16& b, float beta, float* c, int ldc,
               Workers* workers);

namespace detail {
void pack_b_bf16_avx512(bool trans_b, const float* b, int ldb, int k, int n, PackedBf16& out, Workers* workers);
void gemm_bf16_avx512(bool trans_a, int m, const float* a, int lda, const PackedBf16& b, float beta, float* c, int ldc,
                      Workers* workers);
void gemm_bf16_amx(bool trans_a, int m, const float* a, int lda, const PackedBf16& b, float beta, float* c, int ldc,
                   Workers* workers);
void pack_b_bf16_emulated(bool trans_b, const float* b, int ldb, int k, int n, PackedBf16& out);
void gemm_bf16_emulated(bool trans_a, int m, const float* a, int lda, const PackedBf16& b, float beta, float* c,
                        int ldc, Workers* workers);
}  // namespace detail

}  // namespace svc::train
