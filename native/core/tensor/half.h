// 16-bit floats as safetensors stores them: fp16 and bf16 widened to fp32 exactly,
// and fp32 narrowed to fp16 (the fine-tuned weights the trainer writes).
#pragma once

#include <cstdint>

namespace svc {

float half_to_float(uint16_t h);
float bfloat16_to_float(uint16_t b);
uint16_t float_to_half(float f);  // round to nearest even, overflow to infinity

}  // namespace svc
