// Reading and writing .safetensors files for the trainer: the checkpoint it
// starts from, and the fine-tuned weights it exports (fp16, the same names and
// shapes, so the encoder loads them like the base model). The format: an 8-byte
// little-endian header length, a JSON header (name -> dtype, shape,
// data_offsets), then the raw little-endian data.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace svc::train {

struct StoredTensor {
  std::string dtype;              // "F16", "BF16", "F32", "I64", ...
  std::vector<int64_t> shape;
  std::vector<uint8_t> bytes;     // raw data as stored

  int64_t elements() const;
  std::vector<float> to_f32() const;  // F16, BF16 or F32; throws for other dtypes
};

// Throws std::runtime_error naming the file on I/O or format errors.
std::map<std::string, StoredTensor> read_safetensors(const std::string& path);
void write_safetensors(const std::string& path, const std::map<std::string, StoredTensor>& tensors);

uint16_t float_to_half(float f);   // round to nearest even, overflow to infinity (widening: tensor/safetensors.h)
StoredTensor f16_tensor(const std::vector<int64_t>& shape, const float* data);

}  // namespace svc::train
