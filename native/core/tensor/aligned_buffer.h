// A heap buffer aligned to 64 bytes (one cache line, one AVX-512 register), so
// kernels can use aligned loads and no two threads share a line at a buffer edge.
#pragma once

#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <new>
#include <utility>

namespace svc {

template <typename T>
class AlignedBuffer {
 public:
  static constexpr std::size_t kAlignment = 64;

  AlignedBuffer() = default;
  explicit AlignedBuffer(std::size_t count) { resize(count); }
  AlignedBuffer(const AlignedBuffer&) = delete;
  AlignedBuffer& operator=(const AlignedBuffer&) = delete;
  AlignedBuffer(AlignedBuffer&& other) noexcept
      : data_(std::exchange(other.data_, nullptr)),
        size_(std::exchange(other.size_, 0)),
        capacity_(std::exchange(other.capacity_, 0)) {}
  AlignedBuffer& operator=(AlignedBuffer&& other) noexcept {
    if (this != &other) {
      std::free(data_);
      data_ = std::exchange(other.data_, nullptr);
      size_ = std::exchange(other.size_, 0);
      capacity_ = std::exchange(other.capacity_, 0);
    }
    return *this;
  }
  ~AlignedBuffer() { std::free(data_); }

  // Grows only; contents are not preserved when it grows (scratch-buffer semantics).
  void resize(std::size_t count) {
    if (count > capacity_) {
      std::free(data_);
      std::size_t bytes = (count * sizeof(T) + kAlignment - 1) / kAlignment * kAlignment;
      data_ = static_cast<T*>(std::aligned_alloc(kAlignment, bytes ? bytes : kAlignment));
      if (!data_) throw std::bad_alloc();
      capacity_ = count;
    }
    size_ = count;
  }
  void zero() { std::memset(static_cast<void*>(data_), 0, size_ * sizeof(T)); }

  T* data() { return data_; }
  const T* data() const { return data_; }
  std::size_t size() const { return size_; }
  T& operator[](std::size_t i) { return data_[i]; }
  const T& operator[](std::size_t i) const { return data_[i]; }

 private:
  T* data_ = nullptr;
  std::size_t size_ = 0;
  std::size_t capacity_ = 0;
};

}  // namespace svc
