#include "encoder/encoder.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

#include "encoder/relative_position.h"
#include "kernels/ops.h"

namespace svc {

Encoder::Encoder(std::shared_ptr<const ModelWeights> weights, int threads, PoolingOptions pooling)
    : weights_(std::move(weights)), pooling_(pooling), pool_(std::max(1, threads)) {}

void Encoder::linear(const Linear& l, const float* a, int64_t m, int k, float* c, const float* residual, Epilogue ep,
                     const AlignedBuffer<float>* ln_gamma, const AlignedBuffer<float>* ln_beta, bool c_feeds_linear) {
  GemmArgs args;
  args.a = a;
  args.lda = k;
  args.m = m;
  args.c = c;
  args.ldc = l.n();
  args.residual = residual;
  args.epilogue = ep;
  if (ln_gamma) {
    args.ln_gamma = ln_gamma->data();
    args.ln_beta = ln_beta->data();
    args.ln_eps = weights_->config.layer_norm_eps;
  }
  if (weights_->precision == Precision::kInt8) {
    // a arrives quantized when the GEMM that wrote it quantized it too.
    if (quantized_ != a) quantize_rows(a, k, m, k, quant_[0], &pool_);
    gemm_s8(quant_[0], args, l.s8, &pool_, c_feeds_linear ? &quant_[1] : nullptr);
    std::swap(quant_[0], quant_[1]);
    quantized_ = c_feeds_linear ? c : nullptr;
  } else if (weights_->precision == Precision::kBf16) {
    // The bf16 product has no epilogue of its own: bias, residual, GELU and LayerNorm follow
    // over row chunks while the rows are still in cache.
    const int n = l.n();
    train::gemm_bf16(false, static_cast<int>(m), a, k, l.bf16, 0.f, c, n, &pool_);
    constexpr int64_t kRowsPerTask = 16;
    pool_.run((m + kRowsPerTask - 1) / kRowsPerTask, [&](int64_t t, int) {
      const int64_t r0 = t * kRowsPerTask, rows = std::min(kRowsPerTask, m - r0);
      ops().bias_epilogue(c + r0 * n, n, rows, n, l.bias.data(), residual ? residual + r0 * n : nullptr, ep);
      if (ln_gamma) ops().layer_norm(c + r0 * n, n, rows, n, ln_gamma->data(), ln_beta->data(), args.ln_eps);
    });
  } else {
    gemm_f32(args, l.f32, packed_a_, &pool_);
  }
}

void Encoder::layer_norm(float* x, int64_t m, const AlignedBuffer<float>& gamma, const AlignedBuffer<float>& beta) {
  const int h = dim();
  const float eps = weights_->config.layer_norm_eps;
  constexpr int64_t kRowsPerTask = 32;  // a task of ~12k floats; fewer rows run on the caller alone
  pool_.run((m + kRowsPerTask - 1) / kRowsPerTask, [&](int64_t t, int) {
    const int64_t r0 = t * kRowsPerTask, rows = std::min(kRowsPerTask, m - r0);
    ops().layer_norm(x + r0 * h, h, rows, h, gamma.data(), beta.data(), eps);
  });
}

const float* Encoder::low_rank(int layer, LinearSlot slot, const float* a, int k, int64_t m, int n,
                               const float* residual) {
  bool any = false;
  for (const RowRun& run : runs_) any = any || !run.adapter->parts(layer, slot).empty();
  if (!any) return residual;
  lora_.resize(static_cast<std::size_t>(m * n));
  constexpr int64_t kRowsPerTask = 16;
  pool_.run((m + kRowsPerTask - 1) / kRowsPerTask, [&](int64_t t, int) {
    const int64_t r0 = t * kRowsPerTask, r1 = std::min(m, r0 + kRowsPerTask);
    float* y = lora_.data() + r0 * n;
    if (residual)
      std::copy(residual + r0 * n, residual + r1 * n, y);
    else
      std::fill(y, y + (r1 - r0) * n, 0.f);
    for (const RowRun& run : runs_) {
      const int64_t s0 = std::max(r0, run.r0), s1 = std::min(r1, run.r1);
      if (s0 >= s1) continue;
      for (const LoraPart& part : run.adapter->parts(layer, slot))
        lora_add_rows(part, run.adapter->rank(), run.adapter->scale(), a + s0 * k, k, s1 - s0, lora_.data() + s0 * n,
                      n);
    }
  });
  return lora_.data();
}

void Encoder::forward(const int32_t* ids, int64_t n_ids, const int32_t* lengths, int64_t n_texts,
                      const std::vector<AdapterSegment>& segments) {
  const EncoderConfig& c = weights_->config;
  const ModelWeights& w = *weights_;
  const int H = c.hidden, I = c.intermediate, dh = c.head_dim();
  offsets_.assign(static_cast<std::size_t>(n_texts) + 1, 0);
  int max_len = 0;
  for (int64_t t = 0; t < n_texts; ++t) {
    if (lengths[t] < 1 || lengths[t] > c.max_tokens())
      throw std::invalid_argument("lengths[" + std::to_string(t) + "] is " + std::to_string(lengths[t]) +
                                  ", must be between 1 and " + std::to_string(c.max_tokens()));
    offsets_[t + 1] = offsets_[t] + lengths[t];
    max_len = std::max(max_len, lengths[t]);
  }
  const int64_t M = offsets_[n_texts];
  if (M != n_ids)
    throw std::invalid_argument("ids has " + std::to_string(n_ids) + " entries but lengths add up to " +
                                std::to_string(M));
  for (int64_t i = 0; i < M; ++i)
    if (ids[i] < 0 || ids[i] >= c.vocab)
      throw std::invalid_argument("ids[" + std::to_string(i) + "] is " + std::to_string(ids[i]) +
                                  ", outside the vocabulary of " + std::to_string(c.vocab));
  runs_.clear();
  if (!segments.empty()) {
    int64_t text = 0;
    for (const AdapterSegment& seg : segments) {
      if (seg.texts < 0 || seg.texts > n_texts - text)
        throw std::invalid_argument("the adapter segments hold more texts than the batch's " + std::to_string(n_texts));
      if (seg.adapter && !seg.adapter->fits(c))
        throw std::invalid_argument("an adapter was read for another base model's shape than this encoder's");
      if (seg.adapter && seg.texts > 0)
        runs_.push_back({offsets_[text], offsets_[text + seg.texts], seg.adapter.get()});
      text += seg.texts;
    }
    if (text != n_texts)
      throw std::invalid_argument("the adapter segments hold " + std::to_string(text) + " texts, the batch " +
                                  std::to_string(n_texts));
  }

  x_.resize(M * H);
  tmp_.resize(M * H);
  ctx_.resize(M * H);
  qkv_.resize(M * 3 * H);
  inter_.resize(M * I);
  const int64_t scratch_per_thread = attention_scratch_floats(max_len, dh);
  scratch_.resize(scratch_per_thread * pool_.size());

  // Embeddings: word + position (restarting per text, from the family's offset) + token type 0, then LayerNorm.
  pool_.run(n_texts, [&](int64_t t, int) {
    for (int64_t i = offsets_[t]; i < offsets_[t + 1]; ++i) {
      const float* word = w.word.data() + static_cast<int64_t>(ids[i]) * H;
      const float* pos = w.position.data() + (c.position_offset + i - offsets_[t]) * H;
      float* row = x_.data() + i * H;
      for (int j = 0; j < H; ++j) row[j] = word[j] + pos[j] + w.token_type0[j];
    }
  });
  layer_norm(x_.data(), M, w.emb_ln_gamma, w.emb_ln_beta);
  quantized_ = nullptr;

  const float scale = 1.0f / std::sqrt(static_cast<float>(dh));
  // Multiply-adds of attention per layer: small batches of short texts run on the caller alone.
  int64_t attention_work = 0;
  for (int64_t t = 0; t < n_texts; ++t) attention_work += static_cast<int64_t>(lengths[t]) * lengths[t] * 2 * H;
  const auto attention = w.precision == Precision::kInt8 ? ops().attention_head_s8 : ops().attention_head;
  // MPNet: the position bias of each head, built once per forward for the longest text and shared by
  // every layer and text: a shorter text of len tokens reads it from max_len - len on, where its
  // distances 1 - len .. len - 1 sit (encoder/relative_position.h).
  const bool biased = w.relative_bias.size() > 0;
  const int64_t bias_per_head = position_bias_floats(max_len);
  if (biased) {
    position_bias_.resize(static_cast<std::size_t>(c.heads * bias_per_head));
    for (int head = 0; head < c.heads; ++head)
      mpnet_position_bias(w.relative_bias.data(), c.heads, head, max_len, position_bias_.data() + head * bias_per_head);
  }
  // int8 rounds the FFN activations to steps of max|row| / 127 for the next GEMM: the coarse GELU's
  // 3e-4 |x| is far below them and costs a fraction of the exact one (the same int8-to-fp32 cosines
  // over the 3,003 UCI sentences and 200 e-mails, docs/benchmarks.md).
  const Epilogue gelu = w.precision == Precision::kInt8 ? Epilogue::kGeluCoarse : Epilogue::kGelu;
  for (const LayerWeights& l : w.layers) {
    const bool last = &l == &w.layers.back();
    const int li = static_cast<int>(&l - w.layers.data());
    linear(l.qkv, x_.data(), M, H, qkv_.data(), low_rank(li, LinearSlot::kQkv, x_.data(), H, M, 3 * H, nullptr),
           Epilogue::kNone);
    // Attention per (text, head); longer texts first would balance better, but texts
    // in one batch are similar and tasks are handed out dynamically.
    auto attend = [&](int64_t task, int thread) {
      const int64_t t = task / c.heads;
      const int head = static_cast<int>(task % c.heads);
      const int64_t row0 = offsets_[t];
      const int len = static_cast<int>(offsets_[t + 1] - row0);
      const float* q = qkv_.data() + row0 * 3 * H + head * dh;
      const float* bias = biased ? position_bias_.data() + head * bias_per_head + (max_len - len) : nullptr;
      attention(q, q + H, q + 2 * H, 3 * H, len, dh, scale, bias, ctx_.data() + row0 * H + head * dh, H,
                scratch_.data() + thread * scratch_per_thread);
    };
    if (attention_work >= (1LL << 20))
      pool_.run(n_texts * c.heads, attend);
    else
      for (int64_t task = 0; task < n_texts * c.heads; ++task) attend(task, 0);
    linear(l.attn_out, ctx_.data(), M, H, tmp_.data(),
           low_rank(li, LinearSlot::kAttnOut, ctx_.data(), H, M, H, x_.data()), Epilogue::kNone, &l.ln1_gamma,
           &l.ln1_beta, true);
    linear(l.inter, tmp_.data(), M, H, inter_.data(), low_rank(li, LinearSlot::kInter, tmp_.data(), H, M, I, nullptr),
           gelu, nullptr, nullptr, true);
    linear(l.out, inter_.data(), M, I, x_.data(), low_rank(li, LinearSlot::kOut, inter_.data(), I, M, H, tmp_.data()),
           Epilogue::kNone, &l.ln2_gamma, &l.ln2_beta, !last);
  }
}

void Encoder::embed(const int32_t* ids, int64_t n_ids, const int32_t* lengths, int64_t n_texts, float* out,
                    const std::vector<AdapterSegment>& segments) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (n_texts == 0) return;
  forward(ids, n_ids, lengths, n_texts, segments);
  const int H = dim();
  pool_.run(n_texts, [&](int64_t t, int) {
    float* o = out + t * H;
    if (pooling_.cls) {
      const float* first = x_.data() + offsets_[t] * H;
      std::copy(first, first + H, o);
    } else {
      std::fill(o, o + H, 0.0f);
      for (int64_t i = offsets_[t]; i < offsets_[t + 1]; ++i) ops().add_into(o, x_.data() + i * H, H);
      const float inv_len = 1.0f / static_cast<float>(offsets_[t + 1] - offsets_[t]);
      for (int j = 0; j < H; ++j) o[j] *= inv_len;
    }
    if (!pooling_.normalize) return;
    double norm = 0;
    for (int j = 0; j < H; ++j) norm += static_cast<double>(o[j]) * o[j];
    // sentence-transformers' Normalize: x / max(||x||, 1e-12).
    const float inv_norm = static_cast<float>(1.0 / std::max(std::sqrt(norm), 1e-12));
    for (int j = 0; j < H; ++j) o[j] *= inv_norm;
  });
}

void Encoder::hidden_states(const int32_t* ids, int64_t n_ids, const int32_t* lengths, int64_t n_texts, float* out,
                            const std::vector<AdapterSegment>& segments) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (n_texts == 0) return;
  forward(ids, n_ids, lengths, n_texts, segments);
  std::copy(x_.data(), x_.data() + offsets_[n_texts] * dim(), out);
}

}  // namespace svc
