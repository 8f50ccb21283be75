// Reads tensors from a .safetensors file: an 8-byte little-endian header length,
// a JSON header (name -> dtype, shape, byte offsets), then the raw data.
// Tensors are read with pread into fp32, 64-byte aligned buffers; the file is not
// kept mapped, so resident memory holds only the converted weights.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "tensor/aligned_buffer.h"

namespace svc {

enum class DType { F32, F16, BF16, Other };

struct TensorInfo {
  DType dtype = DType::Other;
  std::string dtype_name;
  std::vector<int64_t> shape;
  uint64_t begin = 0;  // byte offsets into the data section
  uint64_t end = 0;
  int64_t elements() const;
};

class SafeTensorsFile {
 public:
  // Throws std::runtime_error naming the path on a missing file or a malformed header.
  explicit SafeTensorsFile(const std::string& path);
  ~SafeTensorsFile();
  SafeTensorsFile(const SafeTensorsFile&) = delete;
  SafeTensorsFile& operator=(const SafeTensorsFile&) = delete;

  bool has(const std::string& name) const { return tensors_.count(name) != 0; }
  const TensorInfo& info(const std::string& name) const;
  const std::map<std::string, TensorInfo>& tensors() const { return tensors_; }

  // Reads a tensor as fp32; `expected_shape` is checked when not empty.
  AlignedBuffer<float> read_f32(const std::string& name, const std::vector<int64_t>& expected_shape = {}) const;

 private:
  std::string path_;
  int fd_ = -1;
  uint64_t data_offset_ = 0;
  uint64_t file_size_ = 0;
  std::map<std::string, TensorInfo> tensors_;
};

float half_to_float(uint16_t h);
float bfloat16_to_float(uint16_t b);

}  // namespace svc
