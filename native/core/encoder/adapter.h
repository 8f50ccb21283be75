// A LoRA adapter in Hugging Face PEFT's layout (adapter_model.safetensors), read and checked
// against an encoder's config and merged into its linear layers at load: W' = W + scale B A.
// A and B stay in the file's float type (F16 from our trainer), so the merged copy and the
// segmented path below compute with the same values.
// Tensor names are PEFT's for a BertModel:
//   base_model.model.encoder.layer.{i}.{module}.lora_A.weight  [r x in]
//   base_model.model.encoder.layer.{i}.{module}.lora_B.weight  [out x r]
// with module one of attention.self.{query,key,value}, attention.output.dense,
// intermediate.dense, output.dense.
// The same object also serves the segmented path: a shared base encoder adds
// scale (x A^T) B^T per run of rows of this adapter's model (lora_add_rows), so thousands of
// adapters ride on one packed base instead of a merged copy each.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "io/config.h"
#include "tensor/aligned_buffer.h"

namespace svc {

// What an Encoder merges: the file, the rank adapter_config.json declares, and alpha / r.
// `modules`, when not 0, is the set adapter_config.json adapts (bit i: the i-th of query, key,
// value, attention.output.dense, intermediate.dense, output.dense): the file must then hold A and
// B of exactly those modules in every layer. 0 takes whichever modules the file holds.
struct AdapterSpec {
  std::string path;
  int rank = 0;
  float scale = 0.f;
  uint32_t modules = 0;
};

// The largest rank read (the library's kMaxAdapterRank).
constexpr int kMaxRank = 256;

// The encoder's four packed linear layers per BERT layer (Q, K and V are one fused [3H x H]).
enum class LinearSlot { kQkv = 0, kAttnOut = 1, kInter = 2, kOut = 3 };

// How an adapter's A and B are held: as the file stores them, so that a worker keeps thousands at
// half the fp32 bytes (the trainer writes F16) and the values are the file's exactly. Products
// widen them to fp32 a row at a time.
enum class LoraStorage { kF32, kF16, kBf16 };

// One adapted nn.Linear as the segmented path reads it: A [rank x in] as the file has it, B
// transposed to [rank x out] (so the update is an axpy per rank row), writing columns
// [col, col + out) of its packed layer's output (Q, K or V's third of the fused projection).
// a and bt point at elements of `storage` (uint16_t for kF16 / kBf16, float for kF32).
struct LoraPart {
  const void* a;
  const void* bt;
  LoraStorage storage;
  int in, out, col;
};

// dst[0, n) = row `row` of a [rows x n] matrix held in `storage`, widened exactly to fp32.
void lora_widen_row(LoraStorage storage, const void* matrix, int64_t row, int n, float* dst);

// y[i][col + o] += scale sum_r (x[i] . A[r]) Bt[r][o] for `rows` rows: fp32 products over rows of A
// and Bt widened once per block of 16 rows, portable code the compiler vectorizes at the build's
// baseline ISA (it runs the same on every SVC_ISA level and on arm64); the rank is small, so this
// is a few percent of the layer's base GEMM.
void lora_add_rows(const LoraPart& part, int rank, float scale, const float* x, int64_t ldx, int64_t rows, float* y,
                   int64_t ldy);

class LoraAdapter {
 public:
  // Reads every tensor and refuses, naming the tensor: a name that is not an adapted linear layer of
  // this config (of spec.modules when given), an A or B of spec.modules missing, an A without its B
  // (or the reverse), a shape other than [rank x in] / [out x rank], a non-finite value. Throws
  // json::Error (a plain std::runtime_error) with the path. This is the whole check a worker makes
  // before an adapter model predicts: nothing on the main thread reads the values.
  LoraAdapter(const AdapterSpec& spec, const EncoderConfig& config);

  // Adds scale B A into w (out x in, row-major) when `linear` (e.g. "encoder.layer.0.attention.self.query")
  // is adapted; leaves it alone otherwise.
  void merge_into(const std::string& linear, float* w, int64_t out, int64_t in) const;

  // Adapted linear layers (for tests and the weights' accounting).
  std::size_t size() const { return pairs_.size(); }

  // The adapted parts of one packed layer (empty when none of its modules is adapted).
  const std::vector<LoraPart>& parts(int layer, LinearSlot slot) const {
    return parts_[static_cast<std::size_t>(layer)][static_cast<std::size_t>(slot)];
  }
  int rank() const { return rank_; }
  float scale() const { return scale_; }
  // Resident bytes of A and B (2 per value for an F16 or BF16 file, 4 for F32).
  std::size_t bytes() const { return bytes_; }
  LoraStorage storage() const { return storage_; }
  // The shape it was checked against: an encoder refuses an adapter of another shape.
  bool fits(const EncoderConfig& c) const {
    return c.layers == layers_ && c.hidden == hidden_ && c.intermediate == intermediate_;
  }

 private:
  struct Pair {
    // a: rank x in, bt: rank x out (B transposed); the half buffers for kF16 / kBf16, else the float ones.
    AlignedBuffer<uint16_t> a16, bt16;
    AlignedBuffer<float> a32, bt32;
    const void* a() const { return a16.size() ? static_cast<const void*>(a16.data()) : a32.data(); }
    const void* bt() const { return bt16.size() ? static_cast<const void*>(bt16.data()) : bt32.data(); }
  };
  std::map<std::string, Pair> pairs_;                        // by linear-layer name without the PEFT prefix
  std::vector<std::array<std::vector<LoraPart>, 4>> parts_;  // by layer and LinearSlot, into pairs_
  int rank_;
  float scale_;
  LoraStorage storage_ = LoraStorage::kF32;
  std::size_t bytes_ = 0;
  int layers_ = 0, hidden_ = 0, intermediate_ = 0;
};

}  // namespace svc
