#include "encoder/adapter.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <utility>
#include <vector>

#include "io/json.h"
#include "io/safetensors.h"

namespace svc {

namespace {

const char kPrefix[] = "base_model.model.";

struct Module {
  const char* name;
  bool in_is_intermediate, out_is_intermediate;
  LinearSlot slot;
  int col_in_hidden;  // first output column in the packed layer, in multiples of hidden
};
// The six linear layers of a BERT layer, which of their sides is the FFN width, and where each
// lands in the encoder's packed layers.
constexpr Module kModules[] = {
    {"attention.self.query", false, false, LinearSlot::kQkv, 0},
    {"attention.self.key", false, false, LinearSlot::kQkv, 1},
    {"attention.self.value", false, false, LinearSlot::kQkv, 2},
    {"attention.output.dense", false, false, LinearSlot::kAttnOut, 0},
    {"intermediate.dense", false, true, LinearSlot::kInter, 0},
    {"output.dense", true, false, LinearSlot::kOut, 0},
};
// The same six in MPNet's layer, in the same order (a module's bit in AdapterSpec::modules is its index).
constexpr Module kMpnetModules[] = {
    {"attention.attn.q", false, false, LinearSlot::kQkv, 0},
    {"attention.attn.k", false, false, LinearSlot::kQkv, 1},
    {"attention.attn.v", false, false, LinearSlot::kQkv, 2},
    {"attention.attn.o", false, false, LinearSlot::kAttnOut, 0},
    {"intermediate.dense", false, true, LinearSlot::kInter, 0},
    {"output.dense", true, false, LinearSlot::kOut, 0},
};
constexpr std::size_t kModuleCount = std::size(kModules);
static_assert(std::size(kMpnetModules) == kModuleCount);

// The family's module table, as PEFT names the modules of its checkpoint.
const Module* modules_of(const EncoderConfig& config) {
  return config.model_type == ModelType::kMpnet ? kMpnetModules : kModules;
}

// Splits "base_model.model.encoder.layer.{i}.{module}.lora_{A|B}.weight" into the linear layer's
// name ("encoder.layer.{i}.{module}"), its module and A or B; false for anything else.
bool parse_name(const std::string& name, const Module* modules, int layers, std::string* linear, const Module** module,
                char* which, int* layer_out) {
  const std::string head = std::string(kPrefix) + "encoder.layer.";
  if (name.compare(0, head.size(), head) != 0) return false;
  std::size_t pos = head.size(), digits = 0;
  int layer = 0;
  while (pos < name.size() && name[pos] >= '0' && name[pos] <= '9' && digits < 6) {
    layer = layer * 10 + (name[pos] - '0');
    ++pos, ++digits;
  }
  if (digits == 0 || (digits > 1 && name[head.size()] == '0') || layer >= layers) return false;
  if (pos >= name.size() || name[pos] != '.') return false;
  const std::string rest = name.substr(pos + 1);
  for (const Module* m = modules; m != modules + kModuleCount; ++m) {
    for (char w : {'A', 'B'}) {
      if (rest == std::string(m->name) + ".lora_" + w + ".weight") {
        *linear = "encoder.layer." + std::to_string(layer) + "." + m->name;
        *module = m;
        *which = w;
        *layer_out = layer;
        return true;
      }
    }
  }
  return false;
}

}  // namespace

LoraAdapter::LoraAdapter(const AdapterSpec& spec, const EncoderConfig& config) : rank_(spec.rank), scale_(spec.scale) {
  if (spec.rank < 1 || spec.rank > kMaxRank)
    throw json::Error(spec.path + ": the adapter's rank must be between 1 and 256");
  if (!std::isfinite(spec.scale)) throw json::Error(spec.path + ": the adapter's scale (lora_alpha / r) is not finite");
  const io::SafeTensorsFile file(spec.path);
  const Module* const modules = modules_of(config);
  const auto fail = [&](const std::string& tensor, const std::string& what) -> json::Error {
    return json::Error(spec.path + ": tensor '" + tensor + "' " + what);
  };
  struct Seen {
    std::string a, b;
    const Module* module = nullptr;
    int layer = 0;
  };
  // The adapted modules' names, as the library's check words them ("attention.self.query, output.dense").
  const auto adapted = [&] {
    std::string list;
    for (std::size_t m = 0; m < kModuleCount; ++m)
      if (spec.modules & (1u << m)) list += (list.empty() ? "" : ", ") + std::string(modules[m].name);
    return list;
  };
  std::map<std::string, Seen> seen;
  for (const auto& [name, info] : file.tensors()) {
    std::string linear;
    const Module* module = nullptr;
    char which = 0;
    int layer = 0;
    const bool parsed = parse_name(name, modules, config.layers, &linear, &module, &which, &layer);
    if (spec.modules != 0 && (!parsed || !(spec.modules & (1u << (module - modules)))))
      throw fail(name, "is not a LoRA weight of the adapted modules (" + adapted() + ") in the base's " +
                           std::to_string(config.layers) + " layers");
    if (!parsed)
      throw fail(name, "is not a LoRA weight of this encoder's linear layers (" + std::to_string(config.layers) +
                           " layers; expected " + kPrefix + "encoder.layer.<i>.<module>.lora_A.weight or lora_B)");
    Seen& s = seen[linear];
    s.module = module;
    s.layer = layer;
    (which == 'A' ? s.a : s.b) = name;
  }
  // Every layer's A and B of every module adapter_config.json adapts, in layer, module, A-then-B order.
  for (int layer = 0; spec.modules != 0 && layer < config.layers; ++layer)
    for (std::size_t m = 0; m < kModuleCount; ++m)
      for (const char* which : {"A", "B"}) {
        const std::string name = std::string(kPrefix) + "encoder.layer." + std::to_string(layer) + "." +
                                 modules[m].name + ".lora_" + which + ".weight";
        if ((spec.modules & (1u << m)) && !file.tensors().count(name))
          throw fail(name, "is missing (adapter_config.json adapts this module)");
      }
  if (seen.empty()) throw json::Error(spec.path + ": the adapter holds no LoRA tensors");
  // One storage for the whole adapter: 16-bit when every tensor is (the trainer's F16), else fp32.
  const std::string first_dtype = file.info(seen.begin()->second.a).dtype;
  bool uniform = first_dtype == "F16" || first_dtype == "BF16";
  for (const auto& [name, info] : file.tensors()) uniform = uniform && info.dtype == first_dtype;
  storage_ = !uniform ? LoraStorage::kF32 : first_dtype == "F16" ? LoraStorage::kF16 : LoraStorage::kBf16;
  const uint16_t non_finite = storage_ == LoraStorage::kF16 ? 0x7c00 : 0x7f80;  // an all-ones exponent
  for (const auto& [linear, s] : seen) {
    if (s.a.empty()) throw fail(s.b, "has no lora_A.weight beside it");
    if (s.b.empty()) throw fail(s.a, "has no lora_B.weight beside it");
    const int64_t in = s.module->in_is_intermediate ? config.intermediate : config.hidden;
    const int64_t out = s.module->out_is_intermediate ? config.intermediate : config.hidden;
    const auto check_shape = [&](const std::string& name, const std::vector<int64_t>& shape) {
      const io::TensorInfo& info = file.info(name);
      if (info.shape != shape)
        throw fail(name, "has shape " + io::shape_text(info.shape) + ", expected " + io::shape_text(shape) +
                             " (r = " + std::to_string(rank_) + " and the base's config)");
    };
    check_shape(s.a, {rank_, in});
    check_shape(s.b, {out, rank_});
    Pair p;
    // B [out x rank] becomes Bt [rank x out]: the update then runs along contiguous rows.
    const auto transpose = [&](const auto* b, auto* bt) {
      for (int64_t o = 0; o < out; ++o)
        for (int r = 0; r < rank_; ++r) bt[r * out + o] = b[o * rank_ + r];
    };
    if (storage_ == LoraStorage::kF32) {
      const auto read = [&](const std::string& name, std::vector<int64_t> shape) {
        AlignedBuffer<float> values = file.read_f32(name, shape);
        for (std::size_t k = 0; k < values.size(); ++k)
          if (!std::isfinite(values[k])) throw fail(name, "holds a non-finite value at element " + std::to_string(k));
        return values;
      };
      p.a32 = read(s.a, {rank_, in});
      const AlignedBuffer<float> b = read(s.b, {out, rank_});
      p.bt32.resize(static_cast<std::size_t>(rank_ * out));
      transpose(b.data(), p.bt32.data());
    } else {
      const auto read = [&](const std::string& name) {
        const io::StoredTensor t = file.read(name);
        AlignedBuffer<uint16_t> values(t.bytes.size() / 2);
        std::memcpy(values.data(), t.bytes.data(), t.bytes.size());  // little-endian, as the file
        for (std::size_t k = 0; k < values.size(); ++k)
          if ((values[k] & non_finite) == non_finite)
            throw fail(name, "holds a non-finite value at element " + std::to_string(k));
        return values;
      };
      p.a16 = read(s.a);
      const AlignedBuffer<uint16_t> b = read(s.b);
      p.bt16.resize(static_cast<std::size_t>(rank_ * out));
      transpose(b.data(), p.bt16.data());
    }
    bytes_ += static_cast<std::size_t>(rank_) * static_cast<std::size_t>(in + out) *
              (storage_ == LoraStorage::kF32 ? sizeof(float) : sizeof(uint16_t));
    const auto placed = pairs_.emplace(linear, std::move(p)).first;
    // The buffers' storage does not move with the map node, so parts_ may point into it.
    parts_.resize(static_cast<std::size_t>(config.layers));
    parts_[static_cast<std::size_t>(s.layer)][static_cast<std::size_t>(s.module->slot)].push_back(
        LoraPart{placed->second.a(), placed->second.bt(), storage_, static_cast<int>(in), static_cast<int>(out),
                 s.module->col_in_hidden * config.hidden});
  }
  layers_ = config.layers;
  hidden_ = config.hidden;
  intermediate_ = config.intermediate;
}

void LoraAdapter::merge_into(const std::string& linear, float* w, int64_t out, int64_t in) const {
  const auto it = pairs_.find(linear);
  if (it == pairs_.end()) return;
  const Pair& p = it->second;
  // W[o][k] += scale sum_r B[o][r] A[r][k] over the same widened values the segmented path uses: a few million
  // multiply-adds per layer, once per load.
  std::vector<float> a(static_cast<std::size_t>(rank_ * in)), bt(static_cast<std::size_t>(rank_ * out));
  for (int r = 0; r < rank_; ++r) {
    lora_widen_row(storage_, p.a(), r, static_cast<int>(in), a.data() + r * in);
    lora_widen_row(storage_, p.bt(), r, static_cast<int>(out), bt.data() + r * out);
  }
  std::vector<float> row(static_cast<std::size_t>(in));
  for (int64_t o = 0; o < out; ++o) {
    std::fill(row.begin(), row.end(), 0.f);
    for (int r = 0; r < rank_; ++r) {
      const float b = bt[static_cast<std::size_t>(r * out + o)];
      const float* ar = a.data() + static_cast<int64_t>(r) * in;
      for (int64_t k = 0; k < in; ++k) row[k] += b * ar[k];
    }
    float* wo = w + o * in;
    for (int64_t k = 0; k < in; ++k) wo[k] += scale_ * row[k];
  }
}

}  // namespace svc

namespace svc {

namespace {

// fp16 bits placed in an fp32's exponent and mantissa fields read 2^-112 times the half's value, for normals
// and subnormals alike; one multiply restores it exactly (the adapter holds no infinity or NaN, refused at
// load). Branch-free, so the loop below vectorizes at the baseline ISA.
inline float widen_half(uint16_t h) {
  const uint32_t bits = static_cast<uint32_t>(h & 0x8000) << 16 | static_cast<uint32_t>(h & 0x7fff) << 13;
  float f;
  std::memcpy(&f, &bits, 4);
  return f * 0x1p112f;
}

inline float widen_bf16(uint16_t h) {
  const uint32_t bits = static_cast<uint32_t>(h) << 16;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

}  // namespace

void lora_widen_row(LoraStorage storage, const void* matrix, int64_t row, int n, float* dst) {
  if (storage == LoraStorage::kF32) {
    std::memcpy(dst, static_cast<const float*>(matrix) + row * n, static_cast<std::size_t>(n) * sizeof(float));
    return;
  }
  const uint16_t* src = static_cast<const uint16_t*>(matrix) + row * n;
  if (storage == LoraStorage::kF16)
    for (int k = 0; k < n; ++k) dst[k] = widen_half(src[k]);
  else
    for (int k = 0; k < n; ++k) dst[k] = widen_bf16(src[k]);
}

void lora_add_rows(const LoraPart& part, int rank, float scale, const float* x, int64_t ldx, int64_t rows, float* y,
                   int64_t ldy) {
  constexpr int kLanes = 16;  // independent partial sums: a dot product the compiler vectorizes without reassociating
  constexpr int kBlock = 16;  // rows sharing one widening of A and Bt (the encoder hands out 16 rows a task)
  float t[kBlock][kMaxRank];  // LoraAdapter refuses larger ranks
  // One widened row of A or Bt; per thread, since the encoder's threads run this at once.
  thread_local std::vector<float> wide;
  wide.resize(static_cast<std::size_t>(std::max(part.in, part.out)));
  float* w = wide.data();
  for (int64_t i0 = 0; i0 < rows; i0 += kBlock) {
    const int64_t block = std::min<int64_t>(kBlock, rows - i0);
    for (int r = 0; r < rank; ++r) {
      lora_widen_row(part.storage, part.a, r, part.in, w);
      for (int64_t i = 0; i < block; ++i) {
        const float* xi = x + (i0 + i) * ldx;
        float acc[kLanes] = {};
        int k = 0;
        for (; k + kLanes <= part.in; k += kLanes)
          for (int l = 0; l < kLanes; ++l) acc[l] += xi[k + l] * w[k + l];
        float sum = 0.f;
        for (; k < part.in; ++k) sum += xi[k] * w[k];
        for (int l = 0; l < kLanes; ++l) sum += acc[l];
        t[i][r] = scale * sum;
      }
    }
    for (int r = 0; r < rank; ++r) {
      lora_widen_row(part.storage, part.bt, r, part.out, w);
      for (int64_t i = 0; i < block; ++i) {
        const float s = t[i][r];
        float* yi = y + (i0 + i) * ldy + part.col;
        for (int o = 0; o < part.out; ++o) yi[o] += s * w[o];
      }
    }
  }
}

}  // namespace svc
