// The one safetensors reader and writer: an 8-byte little-endian header length, a
// JSON header (name -> dtype, shape, data_offsets), then the raw little-endian data.
// Opening a file checks the whole header with 64-bit checked arithmetic: known dtypes,
// non-negative integer dimensions, offsets inside the data section, byte sizes equal to
// shape x dtype width, no two tensors sharing bytes. Tensors are then read with pread
// on demand, so the file is never mapped and a reader keeps only what it converts.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "io/json.h"
#include "tensor/aligned_buffer.h"

namespace svc::io {

struct TensorInfo {
  std::string dtype;  // "F16", "BF16", "F32", "I64", ...
  std::vector<int64_t> shape;
  uint64_t begin = 0;  // byte offsets into the data section
  uint64_t end = 0;
  int64_t elements = 0;
};

// A tensor held in memory with its bytes as stored (the trainer's checkpoint and export).
struct StoredTensor {
  std::string dtype;
  std::vector<int64_t> shape;
  std::vector<uint8_t> bytes;

  int64_t elements() const;
  // F16, BF16 or F32 widened to fp32; throws json::Error for other dtypes or a size mismatch.
  std::vector<float> to_f32() const;
};

class SafeTensorsFile {
 public:
  // Throws json::Error naming the path (and the tensor) on a missing file or any bad header entry.
  explicit SafeTensorsFile(const std::string& path);
  ~SafeTensorsFile();
  SafeTensorsFile(const SafeTensorsFile&) = delete;
  SafeTensorsFile& operator=(const SafeTensorsFile&) = delete;

  const std::string& path() const { return path_; }
  bool has(const std::string& name) const { return tensors_.count(name) != 0; }
  const TensorInfo& info(const std::string& name) const;
  const std::map<std::string, TensorInfo>& tensors() const { return tensors_; }

  // A float tensor (F32, F16 or BF16) widened to fp32; its shape must be exactly `shape`.
  AlignedBuffer<float> read_f32(const std::string& name, const std::vector<int64_t>& shape) const;
  StoredTensor read(const std::string& name) const;

 private:
  [[noreturn]] void fail(const std::string& name, const std::string& what) const;
  void read_at(void* dst, uint64_t bytes, uint64_t offset) const;

  std::string path_;
  int fd_ = -1;
  uint64_t data_offset_ = 0;
  std::map<std::string, TensorInfo> tensors_;
};

// Bytes per element of a dtype safetensors names; 0 for an unknown one.
int dtype_width(const std::string& dtype);
std::string shape_text(const std::vector<int64_t>& shape);

// Every tensor of a file, bytes included.
std::map<std::string, StoredTensor> read_all(const std::string& path);
// Writes through a temporary file renamed into place; the header is what read_all accepts.
void write_safetensors(const std::string& path, const std::map<std::string, StoredTensor>& tensors);
StoredTensor f16_tensor(const std::vector<int64_t>& shape, const float* data);

}  // namespace svc::io
