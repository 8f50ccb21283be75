// The segmented path's widening of stored adapter values: every finite fp16 and bf16 value
// (subnormals and signed zeros included) must widen to exactly the fp32 the one safetensors
// reader gives, since the merged copy and the segmented rows must compute with the same numbers.
// Then an MPNet base's adapter under PEFT's names for MPNet (attention.attn.q ...), which must land
// on the same packed layers as BERT's, and BERT's names refused on an MPNet base.
// Build: cmake -S . -B build-native -DSVC_NATIVE_TESTS=ON && cmake --build build-native --target adapter_test
#include <cstdint>
#include <cstring>
#include <vector>

#include <cstdio>
#include <cstdlib>
#include <map>
#include <stdexcept>
#include <string>

#include "encoder/adapter.h"
#include "io/safetensors.h"
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

// A rank-2 adapter of every module of a one-layer, 8-wide MPNet-shaped base, named by `paths`.
std::string write_adapter(const char* const* paths, const std::string& file) {
  std::map<std::string, svc::io::StoredTensor> tensors;
  const std::vector<float> values(2 * 16, 0.25f);
  for (int m = 0; m < 6; ++m) {
    const int64_t in = m == 5 ? 16 : 8, out = m == 4 ? 16 : 8;
    const std::string name = std::string("base_model.model.encoder.layer.0.") + paths[m];
    tensors[name + ".lora_A.weight"] = svc::io::f16_tensor({2, in}, values.data());
    tensors[name + ".lora_B.weight"] = svc::io::f16_tensor({out, 2}, values.data());
  }
  svc::io::write_safetensors(file, tensors);
  return file;
}

void reads_mpnet_names() {
  svc::EncoderConfig c;
  c.model_type = svc::ModelType::kMpnet;
  c.layers = 1, c.hidden = 8, c.heads = 2, c.intermediate = 16, c.relative_buckets = 32;
  const char* const mpnet[6] = {"attention.attn.q", "attention.attn.k",   "attention.attn.v",
                                "attention.attn.o", "intermediate.dense", "output.dense"};
  const char* const bert[6] = {"attention.self.query",   "attention.self.key", "attention.self.value",
                               "attention.output.dense", "intermediate.dense", "output.dense"};
  const std::string dir = std::string(std::getenv("TMPDIR") ? std::getenv("TMPDIR") : "/tmp");
  const svc::AdapterSpec spec{write_adapter(mpnet, dir + "/svc-adapter-test-mpnet.safetensors"), 2, 1.0f, 0x3f};
  const svc::LoraAdapter adapter(spec, c);
  CHECK(adapter.size() == 6, "an MPNet adapter of six modules reads six, got %zu", adapter.size());
  CHECK(adapter.parts(0, svc::LinearSlot::kQkv).size() == 3 && adapter.parts(0, svc::LinearSlot::kAttnOut).size() == 1,
        "attn.q, k and v land on the fused projection, attn.o on the attention output");
  std::vector<float> w(64, 0.0f);
  adapter.merge_into("encoder.layer.0.attention.attn.o", w.data(), 8, 8);
  CHECK(w[0] == 2 * 0.25f * 0.25f, "attn.o merges scale B A into the engine's name for it, got %g", w[0]);
  bool refused = false;
  try {
    const svc::AdapterSpec wrong{write_adapter(bert, dir + "/svc-adapter-test-bert.safetensors"), 2, 1.0f, 0x3f};
    const svc::LoraAdapter bert_names(wrong, c);
  } catch (const std::runtime_error& e) {
    // The first name in the file's order is attention.output.dense's; the message lists MPNet's modules.
    const std::string what = e.what();
    refused =
        what.find("'base_model.model.encoder.layer.0.attention.output.dense.lora_A.weight' is not a LoRA weight") !=
            std::string::npos &&
        what.find("(attention.attn.q, attention.attn.k") != std::string::npos;
  }
  CHECK(refused, "BERT's module names are refused on an MPNet base, naming the tensor");
  std::remove(spec.path.c_str());
  std::remove((dir + "/svc-adapter-test-bert.safetensors").c_str());
}

}  // namespace

int main() {
  reads_mpnet_names();
  widens_every_finite_value(svc::LoraStorage::kF16, 0x7c00, svc::half_to_float);
  widens_every_finite_value(svc::LoraStorage::kBf16, 0x7f80, svc::bfloat16_to_float);
  return svc::train::test::exit_code();
}
