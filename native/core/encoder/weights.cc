#include "encoder/weights.h"

#include <sys/stat.h>

#include <climits>
#if defined(__GLIBC__)
#include <malloc.h>
#endif
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <stdexcept>

#include "io/safetensors.h"

namespace svc {

namespace {

// Every tensor is read with the shape the config gives it, never the file's own: a file
// whose shapes disagree with config.json is refused before any buffer is sized from it.
class Loader {
 public:
  Loader(const io::SafeTensorsFile& file, const LoraAdapter* adapter) : file_(file), adapter_(adapter) {
    // Checkpoints saved from BertModel, XLMRobertaModel or MPNetModel (sentence-transformers) have bare
    // names; from a task head they carry "bert.", "roberta." or "mpnet.".
    for (const char* prefix : {"", "bert.", "roberta.", "mpnet.", "model."}) {
      if (file.has(std::string(prefix) + "embeddings.word_embeddings.weight")) {
        prefix_ = prefix;
        return;
      }
    }
    throw json::Error(
        file.path() +
        ": no tensor embeddings.word_embeddings.weight (with or without a bert., roberta. or mpnet. prefix)");
  }

  AlignedBuffer<float> read(const std::string& name, std::vector<int64_t> shape) const {
    return file_.read_f32(prefix_ + name, shape);
  }

  // Several nn.Linear of `out` rows each, stacked along the output dimension (Q, K, V), become one.
  Linear linear(const std::vector<std::string>& names, int64_t out, int64_t in, Precision precision) const {
    const int64_t n = out * static_cast<int64_t>(names.size());
    AlignedBuffer<float> w(static_cast<std::size_t>(n * in)), b(static_cast<std::size_t>(n));
    int64_t row = 0;
    for (const std::string& name : names) {
      AlignedBuffer<float> wi = read(name + ".weight", {out, in});
      if (adapter_) adapter_->merge_into(name, wi.data(), out, in);
      const AlignedBuffer<float> bi = read(name + ".bias", {out});
      std::copy(wi.data(), wi.data() + out * in, w.data() + row * in);
      std::copy(bi.data(), bi.data() + out, b.data() + row);
      row += out;
    }
    Linear l;
    if (precision == Precision::kInt8) {
      l.s8 = pack_s8(w.data(), b.data(), static_cast<int>(n), static_cast<int>(in), qgemm_weight_max());
    } else if (precision == Precision::kBf16) {
      train::pack_b_bf16(true, w.data(), static_cast<int>(in), static_cast<int>(in), static_cast<int>(n), l.bf16,
                         nullptr);
      l.bias = std::move(b);
    } else {
      l.f32 = pack_f32(w.data(), b.data(), static_cast<int>(n), static_cast<int>(in));
    }
    return l;
  }

 private:
  const io::SafeTensorsFile& file_;
  const LoraAdapter* adapter_;
  std::string prefix_;
};

std::shared_ptr<ModelWeights> load(const std::string& config_path, const std::string& weights_path, Precision precision,
                                   const AdapterSpec* spec) {
  auto m = std::make_shared<ModelWeights>();
  m->config = read_encoder_config(config_path);
  m->precision = precision;
  const EncoderConfig& c = m->config;
  const io::SafeTensorsFile file(weights_path);
  // Read and checked in full before the base weights: a bad adapter fails fast.
  const std::unique_ptr<LoraAdapter> adapter = spec ? std::make_unique<LoraAdapter>(*spec, c) : nullptr;
  const Loader ld(file, adapter.get());
  const int64_t H = c.hidden, I = c.intermediate;
  m->word = ld.read("embeddings.word_embeddings.weight", {c.vocab, H});
  m->position = ld.read("embeddings.position_embeddings.weight", {c.max_positions, H});
  m->token_type0.resize(H);
  if (c.model_type == ModelType::kMpnet) {
    // MPNet has no token types (a zero row keeps one embedding sum for every family) and one
    // relative position bias table for all layers.
    std::fill(m->token_type0.data(), m->token_type0.data() + H, 0.0f);
    m->relative_bias = ld.read("encoder.relative_attention_bias.weight", {c.relative_buckets, c.heads});
  } else {
    AlignedBuffer<float> types = ld.read("embeddings.token_type_embeddings.weight", {c.type_vocab, H});
    std::copy(types.data(), types.data() + H, m->token_type0.data());
  }
  m->emb_ln_gamma = ld.read("embeddings.LayerNorm.weight", {H});
  m->emb_ln_beta = ld.read("embeddings.LayerNorm.bias", {H});
  m->bytes = (m->word.size() + m->position.size() + 3 * H + m->relative_bias.size()) * sizeof(float);
  const bool mpnet = c.model_type == ModelType::kMpnet;
  for (int i = 0; i < c.layers; ++i) {
    const std::string p = "encoder.layer." + std::to_string(i) + ".";
    // MPNet's layer is BERT's under other names: attention.attn.{q,k,v,o} and attention.LayerNorm.
    const std::string self = p + (mpnet ? "attention.attn." : "attention.self.");
    const std::string attn_ln = p + (mpnet ? "attention.LayerNorm" : "attention.output.LayerNorm");
    LayerWeights l;
    l.qkv = mpnet ? ld.linear({self + "q", self + "k", self + "v"}, H, H, precision)
                  : ld.linear({self + "query", self + "key", self + "value"}, H, H, precision);
    l.attn_out = ld.linear({mpnet ? self + "o" : p + "attention.output.dense"}, H, H, precision);
    l.inter = ld.linear({p + "intermediate.dense"}, I, H, precision);
    l.out = ld.linear({p + "output.dense"}, H, I, precision);
    l.ln1_gamma = ld.read(attn_ln + ".weight", {H});
    l.ln1_beta = ld.read(attn_ln + ".bias", {H});
    l.ln2_gamma = ld.read(p + "output.LayerNorm.weight", {H});
    l.ln2_beta = ld.read(p + "output.LayerNorm.bias", {H});
    for (const Linear* lin : {&l.qkv, &l.attn_out, &l.inter, &l.out}) m->bytes += lin->bytes();
    m->bytes += 4 * H * sizeof(float);
    m->layers.push_back(std::move(l));
  }
  return m;
}

std::mutex g_cache_mutex;
std::map<std::string, std::weak_ptr<const ModelWeights>> g_cache;

// A file's path and identity: a file saved again to the same path (new inode, size or time)
// is another file.
std::string file_key(const std::string& path) {
  char resolved[PATH_MAX];
  const std::string real = ::realpath(path.c_str(), resolved) ? std::string(resolved) : path;
  struct stat st {};
  if (::stat(real.c_str(), &st) != 0) return real;
  return real + "#" + std::to_string(st.st_ino) + ":" + std::to_string(st.st_size) + ":" +
         std::to_string(static_cast<long long>(st.st_mtim.tv_sec)) + "." + std::to_string(st.st_mtim.tv_nsec);
}

// A float's exact bits, so two scales that print alike are still two keys.
uint32_t float_bits(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, sizeof bits);
  return bits;
}

}  // namespace

std::shared_ptr<const ModelWeights> acquire_weights(const std::string& config_path, const std::string& weights_path,
                                                    Precision precision, const AdapterSpec* adapter) {
  // A CPU without bf16 products runs (and shares) fp32. Where it has them a bf16 request is obeyed: whether
  // they pay differs by CPU (0.7x fp32 on one Intel Xeon's vdpbf16ps, 1.7-1.9x on an AMD Zen 4), so the
  // choice is measured (kernels/autotune.h) by the caller that asks for precision 'auto'.
  if (precision == Precision::kBf16 && !train::bf16_products()) precision = Precision::kF32;
  // The config is part of the key: weights are checked against the config they were loaded
  // with, so the same file under another config.json is another load (and another check).
  const std::string key = file_key(weights_path) + "|" + file_key(config_path) +
                          (precision == Precision::kInt8   ? "#int8"
                           : precision == Precision::kBf16 ? "#bf16"
                                                           : "#fp32") +
                          (adapter ? "|" + file_key(adapter->path) + "#r" + std::to_string(adapter->rank) + "#s" +
                                         std::to_string(float_bits(adapter->scale))
                                   : std::string());
  // Loading happens under the lock: a second caller waits for the first load instead of doing its own.
  std::lock_guard<std::mutex> lock(g_cache_mutex);
  if (auto it = g_cache.find(key); it != g_cache.end()) {
    if (auto alive = it->second.lock()) return alive;
  }
  std::shared_ptr<const ModelWeights> loaded = load(config_path, weights_path, precision, adapter);
#if defined(__GLIBC__)
  // Loading frees as much fp32 scratch as it keeps (unpacked copies, conversion chunks);
  // hand those pages back so resident memory is the weights alone.
  malloc_trim(0);
#endif
  g_cache[key] = loaded;
  return loaded;
}

int loaded_weight_sets() {
  std::lock_guard<std::mutex> lock(g_cache_mutex);
  int n = 0;
  for (auto it = g_cache.begin(); it != g_cache.end();) {
    if (it->second.expired())
      it = g_cache.erase(it);
    else
      ++n, ++it;
  }
  return n;
}

}  // namespace svc
