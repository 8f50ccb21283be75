// Buffers for a training step's activations and scratch, whose large blocks come straight from the
// kernel (mmap) and go back to it when freed (munmap). From the heap, a step whose texts are longer
// than the last one's allocated its larger blocks beside the freed ones, which the heap kept for
// reuse but no later block fitted: a 5-step fine-tuning job on e-mails peaked 240 MB higher for it.
#pragma once

#include <sys/mman.h>

#include <cstddef>
#include <cstdlib>
#include <new>
#include <vector>

namespace svc::train {

template <typename T>
struct PageAllocator {
  using value_type = T;
  // Below this a block comes from the heap, as any small one: mmap rounds up to pages.
  static constexpr std::size_t kMappedBytes = std::size_t(1) << 20;

  PageAllocator() = default;
  template <typename U>
  PageAllocator(const PageAllocator<U>&) {}

  T* allocate(std::size_t n) {
    const std::size_t bytes = n * sizeof(T);
    void* p = nullptr;
    if (bytes < kMappedBytes) {
      p = std::malloc(bytes ? bytes : 1);
      if (!p) throw std::bad_alloc();
    } else {
      p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
      if (p == MAP_FAILED) throw std::bad_alloc();
    }
    return static_cast<T*>(p);
  }
  void deallocate(T* p, std::size_t n) {
    const std::size_t bytes = n * sizeof(T);
    if (bytes < kMappedBytes)
      std::free(p);
    else
      munmap(p, bytes);
  }
  template <typename U>
  bool operator==(const PageAllocator<U>&) const {
    return true;
  }
  template <typename U>
  bool operator!=(const PageAllocator<U>&) const {
    return false;
  }
};

template <typename T>
using StepBuffer = std::vector<T, PageAllocator<T>>;

}  // namespace svc::train
