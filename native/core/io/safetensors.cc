#include "io/safetensors.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>

#include "tensor/half.h"

namespace svc::io {

namespace {

using json::Error;
using json::Value;

// The reference implementation's own cap; a real header is a few kilobytes.
constexpr uint64_t kMaxHeaderBytes = uint64_t{100} << 20;
// Offsets and dimensions are exact in a JSON double up to 2^53.
constexpr int64_t kMaxExact = int64_t{1} << 53;

bool is_float(const std::string& dtype) { return dtype == "F32" || dtype == "F16" || dtype == "BF16"; }

void widen(const std::string& dtype, const uint8_t* raw, int64_t n, float* out) {
  if (dtype == "F32") {
    std::memcpy(out, raw, static_cast<std::size_t>(n) * 4);
    return;
  }
  const bool f16 = dtype == "F16";
  for (int64_t i = 0; i < n; ++i) {
    uint16_t v;
    std::memcpy(&v, raw + 2 * i, 2);
    out[i] = f16 ? half_to_float(v) : bfloat16_to_float(v);
  }
}

}  // namespace

int dtype_width(const std::string& d) {
  if (d == "F16" || d == "BF16" || d == "I16" || d == "U16") return 2;
  if (d == "F32" || d == "I32" || d == "U32") return 4;
  if (d == "F64" || d == "I64" || d == "U64") return 8;
  if (d == "I8" || d == "U8" || d == "BOOL") return 1;
  return 0;
}

std::string shape_text(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (std::size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

int64_t StoredTensor::elements() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

std::vector<float> StoredTensor::to_f32() const {
  if (!is_float(dtype)) throw Error("tensor dtype " + dtype + " is not a float type (F32, F16 or BF16)");
  const int64_t n = elements();
  if (bytes.size() != static_cast<uint64_t>(n) * static_cast<uint64_t>(dtype_width(dtype)))
    throw Error("tensor of shape " + shape_text(shape) + " holds " + std::to_string(bytes.size()) + " bytes");
  std::vector<float> out(static_cast<std::size_t>(n));
  widen(dtype, bytes.data(), n, out.data());
  return out;
}

void SafeTensorsFile::fail(const std::string& name, const std::string& what) const {
  const std::string where = name.size() > 64 ? name.substr(0, 64) + "..." : name;
  throw Error(path_ + ": tensor '" + where + "' " + what);
}

void SafeTensorsFile::read_at(void* dst, uint64_t bytes, uint64_t offset) const {
  char* out = static_cast<char*>(dst);
  while (bytes > 0) {
    const ssize_t n = ::pread(fd_, out, bytes, static_cast<off_t>(offset));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) throw Error("cannot read " + path_ + ": " + (n < 0 ? std::strerror(errno) : "unexpected end of file"));
    out += n;
    bytes -= static_cast<uint64_t>(n);
    offset += static_cast<uint64_t>(n);
  }
}

SafeTensorsFile::SafeTensorsFile(const std::string& path) : path_(path) {
  fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd_ < 0) throw Error("cannot open weights " + path + ": " + std::strerror(errno));
  // From here the destructor will not run on a throw: close the file ourselves.
  try {
    struct stat st {};
    if (::fstat(fd_, &st) != 0) throw Error("cannot stat " + path);
    const uint64_t file_size = static_cast<uint64_t>(st.st_size);
    if (file_size < 8) throw Error(path + ": not a safetensors file (" + std::to_string(file_size) + " bytes)");
    unsigned char len_bytes[8];
    read_at(len_bytes, 8, 0);
    uint64_t header_len = 0;
    for (int i = 7; i >= 0; --i) header_len = header_len << 8 | len_bytes[i];
    if (header_len > file_size - 8 || header_len > kMaxHeaderBytes) {
      throw Error(path + ": header length " + std::to_string(header_len) + " is beyond the file (" +
                  std::to_string(file_size) + " bytes) or the 100 MiB limit");
    }
    std::string header(header_len, '\0');
    read_at(header.data(), header_len, 8);
    data_offset_ = 8 + header_len;
    const uint64_t data_size = file_size - data_offset_;

    Value root;
    try {
      root = json::parse(header, {kMaxHeaderBytes, 8});
    } catch (const Error& e) {
      throw Error(path + ": header: " + e.what());
    }
    if (!root.is_object()) throw Error(path + ": header is not a JSON object");
    for (const auto& [name, v] : root.members()) {
      if (name == "__metadata__") {
        if (!v.is_object()) fail(name, "is not an object");
        continue;
      }
      if (name.empty()) fail(name, "has an empty name");
      const Value* dtype = v.find("dtype");
      const Value* shape = v.find("shape");
      const Value* offsets = v.find("data_offsets");
      if (!dtype || !shape || !offsets) fail(name, "lacks dtype, shape or data_offsets");
      TensorInfo t;
      if (!dtype->is_string() || dtype_width(dtype->as_string()) == 0) fail(name, "has an unknown dtype");
      t.dtype = dtype->as_string();
      if (!shape->is_array()) fail(name, "has a shape that is not an array");
      t.elements = 1;
      for (const Value& d : shape->items()) {
        int64_t dim = 0;
        if (!json::integer_in(d, 0, kMaxExact, &dim))
          fail(name, "has a shape entry that is not a non-negative integer");
        if (__builtin_mul_overflow(t.elements, dim, &t.elements) || t.elements > kMaxExact)
          fail(name, "has a shape too large");
        t.shape.push_back(dim);
      }
      int64_t begin = 0, end = 0;
      if (!offsets->is_array() || offsets->items().size() != 2 ||
          !json::integer_in(offsets->items()[0], 0, kMaxExact, &begin) ||
          !json::integer_in(offsets->items()[1], 0, kMaxExact, &end))
        fail(name, "has data_offsets that are not two non-negative integers");
      t.begin = static_cast<uint64_t>(begin);
      t.end = static_cast<uint64_t>(end);
      if (t.end < t.begin) fail(name, "has data_offsets that end before they begin");
      if (t.end > data_size) {
        fail(name, "has data_offsets [" + std::to_string(t.begin) + ", " + std::to_string(t.end) +
                       ") past the end of the data (" + std::to_string(data_size) + " bytes)");
      }
      int64_t bytes = 0;
      if (__builtin_mul_overflow(t.elements, static_cast<int64_t>(dtype_width(t.dtype)), &bytes) ||
          static_cast<uint64_t>(bytes) != t.end - t.begin) {
        fail(name, "has " + std::to_string(t.end - t.begin) + " bytes, not the " + shape_text(t.shape) + " " + t.dtype +
                       " its shape needs");
      }
      tensors_.emplace(name, std::move(t));
    }
    // Two tensors sharing bytes would let a write through one change the other.
    std::vector<std::pair<const std::string*, const TensorInfo*>> by_offset;
    for (const auto& [name, t] : tensors_)
      if (t.end > t.begin) by_offset.emplace_back(&name, &t);
    // Stable: tensors at one offset stay in name order, so the message names them the same way each time.
    std::stable_sort(by_offset.begin(), by_offset.end(),
                     [](const auto& a, const auto& b) { return a.second->begin < b.second->begin; });
    for (std::size_t i = 1; i < by_offset.size(); ++i) {
      if (by_offset[i].second->begin < by_offset[i - 1].second->end)
        fail(*by_offset[i].first, "overlaps tensor '" + *by_offset[i - 1].first + "'");
    }
  } catch (...) {
    ::close(fd_);
    fd_ = -1;
    throw;
  }
}

SafeTensorsFile::~SafeTensorsFile() {
  if (fd_ >= 0) ::close(fd_);
}

const TensorInfo& SafeTensorsFile::info(const std::string& name) const {
  auto it = tensors_.find(name);
  if (it == tensors_.end()) throw Error(path_ + ": no tensor named '" + name + "'");
  return it->second;
}

AlignedBuffer<float> SafeTensorsFile::read_f32(const std::string& name, const std::vector<int64_t>& shape) const {
  const TensorInfo& t = info(name);
  if (t.shape != shape) fail(name, "has shape " + shape_text(t.shape) + ", the config needs " + shape_text(shape));
  if (!is_float(t.dtype)) fail(name, "has dtype " + t.dtype + " (need F32, F16 or BF16)");
  const int64_t n = t.elements;
  AlignedBuffer<float> out(static_cast<std::size_t>(n));
  if (t.dtype == "F32") {
    read_at(out.data(), t.end - t.begin, data_offset_ + t.begin);
    return out;
  }
  // Convert in chunks so a large embedding table never needs a second full-size copy.
  constexpr int64_t kChunk = 1 << 16;
  std::vector<uint8_t> raw(static_cast<std::size_t>(std::min<int64_t>(n, kChunk)) * 2);
  for (int64_t i = 0; i < n; i += kChunk) {
    const int64_t m = std::min<int64_t>(kChunk, n - i);
    read_at(raw.data(), static_cast<uint64_t>(m) * 2, data_offset_ + t.begin + static_cast<uint64_t>(i) * 2);
    widen(t.dtype, raw.data(), m, out.data() + i);
  }
  return out;
}

StoredTensor SafeTensorsFile::read(const std::string& name) const {
  const TensorInfo& t = info(name);
  StoredTensor out;
  out.dtype = t.dtype;
  out.shape = t.shape;
  out.bytes.resize(t.end - t.begin);
  read_at(out.bytes.data(), out.bytes.size(), data_offset_ + t.begin);
  return out;
}

std::map<std::string, StoredTensor> read_all(const std::string& path) {
  const SafeTensorsFile file(path);
  std::map<std::string, StoredTensor> out;
  for (const auto& [name, info] : file.tensors()) out.emplace(name, file.read(name));
  return out;
}

StoredTensor f16_tensor(const std::vector<int64_t>& shape, const float* data) {
  StoredTensor t;
  t.dtype = "F16";
  t.shape = shape;
  const int64_t n = t.elements();
  t.bytes.resize(static_cast<std::size_t>(n) * 2);
  for (int64_t i = 0; i < n; ++i) {
    const uint16_t h = float_to_half(data[i]);
    std::memcpy(t.bytes.data() + 2 * i, &h, 2);
  }
  return t;
}

void write_safetensors(const std::string& path, const std::map<std::string, StoredTensor>& tensors) {
  std::string header = "{\"__metadata__\":{\"format\":\"pt\"}";
  uint64_t offset = 0;
  for (const auto& [name, t] : tensors) {
    header += "," + json::quote(name) + ":{\"dtype\":" + json::quote(t.dtype) + ",\"shape\":[";
    for (std::size_t i = 0; i < t.shape.size(); ++i) header += (i ? "," : "") + std::to_string(t.shape[i]);
    header += "],\"data_offsets\":[" + std::to_string(offset) + "," + std::to_string(offset + t.bytes.size()) + "]}";
    offset += t.bytes.size();
  }
  header += "}";
  // Pad with spaces so the data section starts 8-byte aligned, as the reference writer does.
  while ((8 + header.size()) % 8) header += ' ';
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) throw Error("cannot create " + tmp);
    unsigned char len[8];
    for (int i = 0; i < 8; ++i) len[i] = static_cast<unsigned char>(static_cast<uint64_t>(header.size()) >> (8 * i));
    out.write(reinterpret_cast<const char*>(len), 8);
    out.write(header.data(), static_cast<std::streamsize>(header.size()));
    for (const auto& [name, t] : tensors)
      out.write(reinterpret_cast<const char*>(t.bytes.data()), static_cast<std::streamsize>(t.bytes.size()));
    if (!out) throw Error("cannot write " + tmp);
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) throw Error("cannot rename " + tmp + " to " + path);
}

}  // namespace svc::io
