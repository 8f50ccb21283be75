// The segmented path's widening of stored adapter values: every finite fp16 and bf16 value
// (subnormals and signed zeros included) must widen to exactly the fp32 the one safetensors
// reader gives, since the merged copy and the segmented rows must compute with the same numbers.
// Build: cmake -S . -B build-native -DSVC_NATIVE_TESTS=ON && cmake --build build-native --target adapter_test
#include <cstdint>
#include <cstring>
#include <vector>

#include "encoder/adapter.h"
#include "tensor/half.h"
#include "test_check.h"

namespace {

uint32_t bits_of(float f) {
  uint32_t b;
  std::memcpy(&b, &f, 4);
  return b;
}

void widens_every_finite_value(svc::LoraStorage storage, uint16_t exponent_mask, float (*reference)(uint16_t)) {
  std::vector<uint16_t> all;
  for (uint32_t h = 0; h <= 0xffff; ++h)
    if ((h & exponent_mask) != exponent_mask) all.push_back(static_cast<uint16_t>(h));
  std::vector<float> wide(all.size());
  svc::lora_widen_row(storage, all.data(), 0, static_cast<int>(all.size()), wide.data());
  int wrong = 0;
  for (std::size_t i = 0; i < all.size(); ++i) {
    if (bits_of(wide[i]) != bits_of(reference(all[i]))) {
      if (++wrong <= 5) CHECK(false, "0x%04x widened to %g, expected %g", all[i], wide[i], reference(all[i]));
    }
  }
  CHECK(wrong == 0, "%d of %zu values widened wrongly", wrong, all.size());
}

}  // namespace

int main() {
  widens_every_finite_value(svc::LoraStorage::kF16, 0x7c00, svc::half_to_float);
  widens_every_finite_value(svc::LoraStorage::kBf16, 0x7f80, svc::bfloat16_to_float);
  return svc::train::test::exit_code();
}
