#include "train/trainer.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <stdexcept>
#if defined(__GLIBC__)
#include <malloc.h>
#endif

#include "train/rng.h"

namespace svc::train {

Trainer::Trainer(const std::string& config_path, const std::string& weights_path, const TrainerOptions& options)
    : checkpoint_(io::read_all(weights_path)), cfg_(read_encoder_config(config_path)) {
  init(options, weights_path);
}

Trainer::Trainer(const EncoderConfig& config, std::map<std::string, StoredTensor> checkpoint,
                 const TrainerOptions& options)
    : checkpoint_(std::move(checkpoint)), cfg_(config) {
  check_encoder_config(cfg_, "the encoder config");
  init(options, "the checkpoint");
}

void Trainer::init(const TrainerOptions& o, const std::string& source) {
  if (o.threads < 1) throw std::invalid_argument("threads must be a positive integer");
  if (o.adam.total_steps < 1) throw std::invalid_argument("total steps must be a positive integer");
  if (o.dropout && !(*o.dropout >= 0 && *o.dropout < 1)) throw std::invalid_argument("dropout must be in [0, 1)");
  if (o.dropout) cfg_.dropout = *o.dropout;
  // Bare names as sentence-transformers saves them, or under a task head's bert., roberta. or mpnet.
  prefix_ = "";
  for (const char* prefix : {"bert.", "roberta.", "mpnet."})
    if (checkpoint_.count(std::string(prefix) + "embeddings.word_embeddings.weight")) prefix_ = prefix;
  // Every tensor read with the shape the config gives it, as the encoder does.
  auto read = [&](const std::string& name, const std::vector<int64_t>& shape) -> const StoredTensor& {
    auto it = checkpoint_.find(prefix_ + name);
    if (it == checkpoint_.end()) throw json::Error(source + ": no tensor named '" + prefix_ + name + "'");
    const StoredTensor& t = it->second;
    if (t.shape != shape)
      throw json::Error(source + ": tensor '" + prefix_ + name + "' has shape " + io::shape_text(t.shape) +
                        ", the config needs " + io::shape_text(shape));
    return t;
  };
  // An adapter's frozen base drops each tensor's bytes once converted, which keeps the file
  // and its fp32 copy from being resident together.
  const bool adapter = o.adapter.rank != 0;
  auto values = [&](const std::string& name, const std::vector<int64_t>& shape) {
    const StoredTensor& t = read(name, shape);
    try {
      std::vector<float> v = t.to_f32();
      if (adapter) std::vector<uint8_t>().swap(checkpoint_.at(prefix_ + name).bytes);
      return v;
    } catch (const json::Error& e) {
      throw json::Error(source + ": tensor '" + prefix_ + name + "': " + e.what());
    }
  };
  const int64_t h = cfg_.hidden;
  emb_.vocab = cfg_.vocab;
  emb_.max_positions = cfg_.max_positions;
  emb_.cls_pooling = o.cls_pooling;
  emb_.normalize = o.normalize;
  const StoredTensor& word = read("embeddings.word_embeddings.weight", {cfg_.vocab, h});
  if (adapter && word.dtype == "F16" && word.bytes.size() == static_cast<size_t>(cfg_.vocab * h) * 2) {
    // Frozen: the file's fp16 values as they are (see Embeddings::word_f16).
    emb_.word_f16.resize(static_cast<size_t>(cfg_.vocab * h));
    std::memcpy(emb_.word_f16.data(), word.bytes.data(), word.bytes.size());
    std::vector<uint8_t>().swap(checkpoint_.at(prefix_ + "embeddings.word_embeddings.weight").bytes);
  } else {
    emb_.word = values("embeddings.word_embeddings.weight", {cfg_.vocab, h});
  }
  emb_.position = values("embeddings.position_embeddings.weight", {cfg_.max_positions, h});
  if (cfg_.model_type == ModelType::kMpnet) {
    // No token types: a zero row keeps one embedding sum. The position bias table stays frozen in full
    // fine-tuning as in adapters (save() writes it back as loaded).
    emb_.token_type.assign(static_cast<size_t>(h), 0.f);
    const std::vector<float> table =
        values("encoder.relative_attention_bias.weight", {cfg_.relative_buckets, cfg_.heads});
    emb_.position_bias.build(table.data(), cfg_.heads, cfg_.max_tokens());
  } else {
    emb_.token_type = values("embeddings.token_type_embeddings.weight", {cfg_.type_vocab, h});
  }
  emb_.ln_g = values("embeddings.LayerNorm.weight", {h});
  emb_.ln_b = values("embeddings.LayerNorm.bias", {h});

  workers_ = std::make_unique<Workers>(o.threads);
  seed_ = o.seed;
  bf16_products_ = o.bf16_products;
  if (adapter) {
    init_adapter(o, values);
  } else {
    params_.assign(param_count(cfg_), 0.f);
    std::vector<uint8_t> decay(params_.size(), 0);
    for (const ParamTensor& p : param_tensors(cfg_)) {
      const std::vector<float> v = values(p.name, p.shape);
      std::copy(v.begin(), v.end(), params_.begin() + p.offset);
      std::fill(decay.begin() + p.offset, decay.begin() + p.offset + static_cast<int64_t>(v.size()), p.decay ? 1 : 0);
    }
    // Embeddings and encoder layers now live as fp32; keep only their names and
    // shapes for save(), and the bytes of everything else (position ids, pooler).
    for (const std::string& name : fp32_tensor_names()) std::vector<uint8_t>().swap(checkpoint_.at(name).bytes);
    grads_.assign(params_.size(), 0.f);
    adam_ = std::make_unique<AdamW>(o.adam, std::move(decay));
  }
  if (!(o.max_grad_norm >= 0)) throw std::invalid_argument("max grad norm must be a non-negative number");
  max_grad_norm_ = o.max_grad_norm;
  train_embeddings_ = o.train_embeddings;
  if (train_embeddings_) {
    // HF's no-decay list: LayerNorm weights and biases; the three tables decay.
    const bool decays[5] = {true, true, true, false, false};
    std::vector<std::vector<float>*> tables = embedding_tables();
    for (size_t i = 0; i < tables.size(); ++i)
      emb_adam_.push_back(std::make_unique<AdamW>(o.adam, std::vector<uint8_t>(tables[i]->size(), decays[i] ? 1 : 0)));
  }
}

void Trainer::init_adapter(const TrainerOptions& o, const TensorValues& values) {
  check_lora_config(cfg_, o.adapter);
  if (o.train_embeddings)
    throw std::invalid_argument("an adapter trains on frozen embeddings: trainEmbeddings must be off");
  lora_ = o.adapter;
  // The frozen base a layer at a time: its weight matrices go straight into the packed panels
  // (never kept as fp32), its vectors (biases, LayerNorm) into a compact params_ that
  // frozen_layers_ indexes; their matrix offsets are 0, never read (the panels hold them).
  const int64_t per = layer_param_count(cfg_);
  const LayerOffsets rel = layer_offsets(cfg_, 0);
  frozen_fwd_.resize(static_cast<size_t>(kPanelsPerLayer) * cfg_.layers);
  frozen_bwd_.resize(frozen_fwd_.size());
  frozen_layers_.assign(cfg_.layers, LayerOffsets{});
  const bool bf16 = bf16_products_ && bf16_products();
  if (bf16) {
    frozen_fwd16_.resize(frozen_fwd_.size());
    frozen_bwd16_.resize(frozen_fwd_.size());
  }
  const std::vector<ParamTensor> tensors = param_tensors(cfg_);
  std::vector<float> layer(per);
  for (int l = 0; l < cfg_.layers; ++l) {
    for (const ParamTensor& p : tensors) {
      if (p.offset < l * per || p.offset >= (l + 1) * per) continue;
      const std::vector<float> v = values(p.name, p.shape);
      std::copy(v.begin(), v.end(), layer.begin() + (p.offset - l * per));
    }
    pack_frozen_layer(cfg_, layer.data(), &frozen_fwd_[kPanelsPerLayer * l], &frozen_bwd_[kPanelsPerLayer * l],
                      workers_.get());
    if (bf16)
      pack_frozen_layer_bf16(cfg_, layer.data(), &frozen_fwd16_[kPanelsPerLayer * l],
                             &frozen_bwd16_[kPanelsPerLayer * l], workers_.get());
    LayerOffsets& o2 = frozen_layers_[l];
    auto keep = [&](int64_t from, int64_t n) {
      const int64_t at = static_cast<int64_t>(params_.size());
      params_.insert(params_.end(), layer.begin() + from, layer.begin() + from + n);
      return at;
    };
    const int64_t h = cfg_.hidden, f = cfg_.intermediate;
    o2.bqkv = keep(rel.bqkv, 3 * h);
    o2.bo = keep(rel.bo, h);
    o2.ln1_g = keep(rel.ln1_g, h);
    o2.ln1_b = keep(rel.ln1_b, h);
    o2.bi = keep(rel.bi, f);
    o2.bo2 = keep(rel.bo2, h);
    o2.ln2_g = keep(rel.ln2_g, h);
    o2.ln2_b = keep(rel.ln2_b, h);
  }
  std::vector<float>().swap(layer);
  params_.shrink_to_fit();
#if defined(__GLIBC__)
  // Loading freed the file's bytes and each layer's fp32 copy in pieces glibc keeps for reuse
  // (some 90 MB for svc-small); hand them back, as nothing of that size is allocated again.
  malloc_trim(0);
#endif
  lora_params_.assign(lora_param_count(cfg_, lora_), 0.f);
  lora_grads_.assign(lora_params_.size(), 0.f);
  // A uniform in ±1/√in from the seed's own stream (not dropout's: those keys mix a step and
  // a site in); B stays zero, so the adapted encoder starts as the base.
  const uint64_t stream = mix64(mix64(seed_) ^ 0x4c6f5241ull);  // "LoRA"
  for (const ParamTensor& t : lora_tensors(cfg_, lora_)) {
    if (t.name.find(".lora_A.") == std::string::npos) continue;
    const double bound = 1.0 / std::sqrt(static_cast<double>(t.shape[1]));
    for (int64_t i = 0; i < t.shape[0] * t.shape[1]; ++i) {
      const double unit = static_cast<double>(mix64(stream ^ mix64(static_cast<uint64_t>(t.offset + i))) >> 11) *
                          (1.0 / 9007199254740992.0);
      lora_params_[t.offset + i] = static_cast<float>(bound * (2 * unit - 1));
    }
  }
  adam_ = std::make_unique<AdamW>(o.adam, std::vector<uint8_t>(lora_params_.size(), 1));
}

std::optional<AdapterPass<float>> Trainer::adapter_pass(bool with_grads) {
  if (!has_adapter()) return std::nullopt;
  return AdapterPass<float>{&lora_, lora_params_.data(), with_grads ? lora_grads_.data() : nullptr, frozen_fwd_.data(),
                            frozen_bwd_.data(), frozen_layers_.data(),
                            // Only a step's products run in bf16; evaluation and embedding stay fp32.
                            with_grads && !frozen_fwd16_.empty() ? frozen_fwd16_.data() : nullptr,
                            with_grads && !frozen_bwd16_.empty() ? frozen_bwd16_.data() : nullptr};
}

std::vector<AdapterTensor> Trainer::adapter_tensors() const {
  std::vector<AdapterTensor> out;
  if (!lora_.rank) return out;
  for (const ParamTensor& t : lora_tensors(cfg_, lora_))
    out.push_back({t.name, t.shape[0], t.shape[1], lora_params_.data() + t.offset});
  return out;
}

StepResult Trainer::step(const PairBatch& batch) {
  if (batch.pairs < 1) throw std::invalid_argument("a step needs at least one pair");
  const StepKey key{seed_, static_cast<uint64_t>(adam_->steps_done()), true, bf16_products_};
  StepResult r;
  const std::optional<AdapterPass<float>> ad = adapter_pass(true);
  r.loss = forward_backward<float>(cfg_, emb_, params_.data(), ad ? nullptr : grads_.data(), batch, key, ws_,
                                   workers_.get(), train_embeddings_ ? &emb_grads_ : nullptr, ad ? &*ad : nullptr);
  r.grad_norm = gradient_norm();
  if (max_grad_norm_ > 0 && r.grad_norm > max_grad_norm_) {
    // As torch.nn.utils.clip_grad_norm_: scale by max / (norm + 1e-6).
    const float scale = static_cast<float>(max_grad_norm_ / (r.grad_norm + 1e-6));
    std::vector<std::vector<float>*> all = embedding_gradients();
    all.push_back(&trained_grads());
    for (std::vector<float>* grads : all) {
      float* g = grads->data();
      parallel_for_grain(workers_.get(), static_cast<int64_t>(grads->size()), kNormBlock, [=](int64_t i0, int64_t i1) {
        for (int64_t i = i0; i < i1; ++i) g[i] *= scale;
      });
    }
  }
  r.lr = adam_->step(trained().data(), trained_grads().data(), workers_.get());
  const std::vector<std::vector<float>*> tables = embedding_tables(), grads = embedding_gradients();
  for (size_t i = 0; i < emb_adam_.size(); ++i) emb_adam_[i]->step(tables[i]->data(), grads[i]->data(), workers_.get());
  r.step = adam_->steps_done();
  return r;
}

std::vector<std::vector<float>*> Trainer::embedding_tables() {
  if (!train_embeddings_) return {};
  return {&emb_.word, &emb_.position, &emb_.token_type, &emb_.ln_g, &emb_.ln_b};
}

std::vector<std::vector<float>*> Trainer::embedding_gradients() {
  if (!train_embeddings_) return {};
  return {&emb_grads_.word, &emb_grads_.position, &emb_grads_.token_type, &emb_grads_.ln_g, &emb_grads_.ln_b};
}

namespace {
double sum_of_squares(const float* g, int64_t n) {
  constexpr int kLanes = 8;
  double lane[kLanes] = {};
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes)
    for (int l = 0; l < kLanes; ++l) lane[l] += static_cast<double>(g[i + l]) * g[i + l];
  for (; i < n; ++i) lane[i % kLanes] += static_cast<double>(g[i]) * g[i];
  return ((lane[0] + lane[1]) + (lane[2] + lane[3])) + ((lane[4] + lane[5]) + (lane[6] + lane[7]));
}
}  // namespace

double Trainer::gradient_norm() {
  // Blocks of fixed size summed in double, then added in block order: the same bits whatever
  // the thread count (22M squares summed in float would lose the small ones). Within a block,
  // eight running sums (element i into sum i % 8, combined in a fixed tree) instead of one:
  // a single sum is a chain of dependent adds the compiler may not reorder, which made this
  // pass about a tenth of a short-text step; eight vectorize.
  std::vector<std::vector<float>*> all = embedding_gradients();
  all.push_back(&trained_grads());
  double total = 0;
  for (const std::vector<float>* grads : all) {
    const int64_t n = static_cast<int64_t>(grads->size());
    const int64_t blocks = (n + kNormBlock - 1) / kNormBlock;
    std::vector<double> partial(blocks, 0.0);
    const float* g = grads->data();
    parallel_for(workers_.get(), blocks, [&](int64_t b0, int64_t b1) {
      for (int64_t b = b0; b < b1; ++b) {
        partial[b] = sum_of_squares(g + b * kNormBlock, std::min(n, (b + 1) * kNormBlock) - b * kNormBlock);
      }
    });
    for (const double part : partial) total += part;
  }
  return std::sqrt(total);
}

double Trainer::evaluate(const PairBatch& batch) {
  const StepKey key{seed_, 0, false};
  const std::optional<AdapterPass<float>> ad = adapter_pass(false);
  return forward_backward<float>(cfg_, emb_, params_.data(), nullptr, batch, key, ws_, workers_.get(), nullptr,
                                 ad ? &*ad : nullptr);
}

void Trainer::embed(const int32_t* ids, const int32_t* lengths, int texts, float* out) {
  // A forward that no backward follows reuses one layer's buffers, but they and the scratch
  // still take about 35 KB a token for svc-small, so embed many texts a slice at a time.
  constexpr int64_t kSliceTokens = 1024;
  const StepKey key{seed_, 0, false};
  const std::optional<AdapterPass<float>> ad = adapter_pass(false);
  const int64_t h = cfg_.hidden;
  int first = 0;
  while (first < texts) {
    int64_t tokens = 0;
    int end = first;
    while (end < texts && (end == first || tokens + lengths[end] <= kSliceTokens)) tokens += lengths[end++];
    PairBatch b;
    b.ids = ids;
    b.lengths = lengths + first;
    b.texts = end - first;
    forward_backward<float>(cfg_, emb_, params_.data(), nullptr, b, key, ws_, workers_.get(), nullptr,
                            ad ? &*ad : nullptr);
    std::memcpy(out + first * h, ws_.emb.data(), sizeof(float) * h * b.texts);
    ids += tokens;
    first = end;
  }
}

std::vector<std::string> Trainer::fp32_tensor_names() const {
  std::vector<std::string> names;
  for (const auto& [name, source] : fp32_sources()) names.push_back(name);
  return names;
}

std::map<std::string, const float*> Trainer::fp32_sources() const {
  std::map<std::string, const float*> sources = {
      {prefix_ + "embeddings.word_embeddings.weight", emb_.word.data()},
      {prefix_ + "embeddings.position_embeddings.weight", emb_.position.data()},
      {prefix_ + "embeddings.LayerNorm.weight", emb_.ln_g.data()},
      {prefix_ + "embeddings.LayerNorm.bias", emb_.ln_b.data()},
  };
  // MPNet's checkpoint has no token type table to write back.
  if (cfg_.model_type != ModelType::kMpnet)
    sources[prefix_ + "embeddings.token_type_embeddings.weight"] = emb_.token_type.data();
  for (const ParamTensor& p : param_tensors(cfg_)) sources[prefix_ + p.name] = params_.data() + p.offset;
  return sources;
}

void Trainer::save(const std::string& path) const {
  if (has_adapter())
    throw std::invalid_argument("an adapter trainer keeps the base as loaded: take its adapter tensors, not save()");
  const std::map<std::string, const float*> sources = fp32_sources();
  std::map<std::string, StoredTensor> out;
  for (const auto& [name, t] : checkpoint_) {
    const auto it = sources.find(name);
    if (it != sources.end())
      out[name] = io::f16_tensor(t.shape, it->second);
    else if (t.dtype == "F16" || t.dtype == "BF16" || t.dtype == "F32")
      out[name] = io::f16_tensor(t.shape, t.to_f32().data());
    else
      out[name] = t;  // integer tensors (position ids) as they came in
  }
  io::write_safetensors(path, out);
}

}  // namespace svc::train
