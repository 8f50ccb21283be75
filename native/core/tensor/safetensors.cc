#include "tensor/safetensors.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <stdexcept>

#include "tensor/json_lite.h"

namespace svc {

namespace {

std::string shape_text(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (std::size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

void pread_all(int fd, void* dst, uint64_t bytes, uint64_t offset, const std::string& path) {
  char* out = static_cast<char*>(dst);
  while (bytes > 0) {
    ssize_t n = ::pread(fd, out, bytes, static_cast<off_t>(offset));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) throw std::runtime_error("cannot read " + path + ": " + (n < 0 ? std::strerror(errno) : "unexpected end of file"));
    out += n;
    bytes -= static_cast<uint64_t>(n);
    offset += static_cast<uint64_t>(n);
  }
}

}  // namespace

float half_to_float(uint16_t h) {
  uint32_t sign = static_cast<uint32_t>(h & 0x8000) << 16;
  uint32_t exp = (h >> 10) & 0x1F;
  uint32_t mant = h & 0x3FF;
  uint32_t bits;
  if (exp == 0) {
    if (mant == 0) {
      bits = sign;
    } else {  // subnormal: normalize
      int e = -1;
      do { mant <<= 1; ++e; } while ((mant & 0x400) == 0);
      bits = sign | static_cast<uint32_t>(127 - 15 - e) << 23 | (mant & 0x3FF) << 13;
    }
  } else if (exp == 0x1F) {
    bits = sign | 0x7F800000u | mant << 13;
  } else {
    bits = sign | (exp + 127 - 15) << 23 | mant << 13;
  }
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

float bfloat16_to_float(uint16_t b) {
  uint32_t bits = static_cast<uint32_t>(b) << 16;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

int64_t TensorInfo::elements() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

SafeTensorsFile::SafeTensorsFile(const std::string& path) : path_(path) {
  fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd_ < 0) throw std::runtime_error("cannot open weights " + path + ": " + std::strerror(errno));
  struct stat st;
  if (::fstat(fd_, &st) != 0) throw std::runtime_error("cannot stat " + path);
  file_size_ = static_cast<uint64_t>(st.st_size);
  unsigned char len_bytes[8];
  if (file_size_ < 8) throw std::runtime_error(path + " is not a safetensors file (too short)");
  pread_all(fd_, len_bytes, 8, 0, path);
  uint64_t header_len = 0;
  for (int i = 7; i >= 0; --i) header_len = header_len << 8 | len_bytes[i];
  if (header_len > file_size_ - 8 || header_len > (100u << 20))
    throw std::runtime_error(path + " is not a safetensors file (bad header length)");
  std::string header(header_len, '\0');
  pread_all(fd_, header.data(), header_len, 8, path);
  data_offset_ = 8 + header_len;

  JsonValue root = parse_json(header, (path + " header").c_str());
  if (!root.is_object()) throw std::runtime_error(path + ": safetensors header is not an object");
  for (const auto& [name, v] : root.object) {
    if (name == "__metadata__") continue;
    const JsonValue* dtype = v.find("dtype");
    const JsonValue* shape = v.find("shape");
    const JsonValue* offsets = v.find("data_offsets");
    if (!dtype || !shape || !offsets || offsets->array.size() != 2)
      throw std::runtime_error(path + ": tensor " + name + " lacks dtype, shape or data_offsets");
    TensorInfo t;
    t.dtype_name = dtype->string;
    t.dtype = t.dtype_name == "F32" ? DType::F32 : t.dtype_name == "F16" ? DType::F16
            : t.dtype_name == "BF16" ? DType::BF16 : DType::Other;
    for (const JsonValue& d : shape->array) t.shape.push_back(static_cast<int64_t>(d.number));
    t.begin = static_cast<uint64_t>(offsets->array[0].number);
    t.end = static_cast<uint64_t>(offsets->array[1].number);
    if (t.end < t.begin || data_offset_ + t.end > file_size_)
      throw std::runtime_error(path + ": tensor " + name + " lies outside the file");
    tensors_.emplace(name, std::move(t));
  }
}

SafeTensorsFile::~SafeTensorsFile() {
  if (fd_ >= 0) ::close(fd_);
}

const TensorInfo& SafeTensorsFile::info(const std::string& name) const {
  auto it = tensors_.find(name);
  if (it == tensors_.end()) throw std::runtime_error(path_ + ": no tensor named " + name);
  return it->second;
}

AlignedBuffer<float> SafeTensorsFile::read_f32(const std::string& name, const std::vector<int64_t>& expected_shape) const {
  const TensorInfo& t = info(name);
  if (!expected_shape.empty() && t.shape != expected_shape)
    throw std::runtime_error(path_ + ": tensor " + name + " has shape " + shape_text(t.shape) + ", expected " +
                             shape_text(expected_shape));
  const int64_t n = t.elements();
  const uint64_t elem_bytes = t.dtype == DType::F32 ? 4 : 2;
  if (t.dtype == DType::Other)
    throw std::runtime_error(path_ + ": tensor " + name + " has dtype " + t.dtype_name + " (need F32, F16 or BF16)");
  if (t.end - t.begin != static_cast<uint64_t>(n) * elem_bytes)
    throw std::runtime_error(path_ + ": tensor " + name + " byte size does not match its shape");
  AlignedBuffer<float> out(static_cast<std::size_t>(n));
  if (t.dtype == DType::F32) {
    pread_all(fd_, out.data(), t.end - t.begin, data_offset_ + t.begin, path_);
    return out;
  }
  // Convert in chunks so a large embedding table never needs a second full-size copy.
  constexpr int64_t kChunk = 1 << 16;
  std::vector<uint16_t> raw(static_cast<std::size_t>(std::min<int64_t>(n, kChunk)));
  for (int64_t i = 0; i < n; i += kChunk) {
    const int64_t m = std::min<int64_t>(kChunk, n - i);
    pread_all(fd_, raw.data(), static_cast<uint64_t>(m) * 2, data_offset_ + t.begin + static_cast<uint64_t>(i) * 2, path_);
    float* dst = out.data() + i;
    if (t.dtype == DType::F16)
      for (int64_t j = 0; j < m; ++j) dst[j] = half_to_float(raw[j]);
    else
      for (int64_t j = 0; j < m; ++j) dst[j] = bfloat16_to_float(raw[j]);
  }
  return out;
}

}  // namespace svc
