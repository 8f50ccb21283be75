// Cross-architecture parity of the engine: one build (x86-64, whose outputs the vitest
// parity suites hold to HF tokenizers and onnxruntime) writes a reference file, another
// build (aarch64 under qemu-user in .ci/cross-arm64) checks itself against it:
//   arch_parity_test <model dir> <corpus file> write <reference file>
//   arch_parity_test <model dir> <corpus file> check <reference file>
// The corpus file holds records "<byte count>\n<UTF-8 bytes>\n". The reference holds the
// token ids of every corpus text and the fp32 embeddings of a few short sentences (kept
// few because qemu runs the encoder some 50x slower than native).
// Checks: ids identical; fp32 cosine >= 0.99999 and every component within 1e-4 (the
// tolerance the onnxruntime parity test uses); int8 against the fp32 reference: mean
// cosine >= 0.99, lowest >= 0.97 (the int8 bound of the same suite); bf16 (fp32 itself where
// the CPU has no AMX) lowest cosine >= 0.9999.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <memory>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "cpu_features.h"
#include "encoder/encoder.h"
#include "kernels/gemm.h"
#include "tokenizer/tokenizer.h"

namespace {

const char* const kSentences[] = {
    "The invoice was paid twice, please refund one payment.",
    "Can you reset my password?",
    "Das Paket kam beschädigt an.",
    "great product, fast shipping!",
};
constexpr int kSentenceCount = sizeof(kSentences) / sizeof(kSentences[0]);

std::vector<std::string> read_corpus(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot open " + path);
  std::vector<std::string> texts;
  std::size_t bytes;
  while (in >> bytes) {
    in.get();  // the newline after the count
    std::string text(bytes, '\0');
    in.read(text.data(), static_cast<std::streamsize>(bytes));
    in.get();
    if (!in) throw std::runtime_error("truncated corpus record in " + path);
    texts.push_back(std::move(text));
  }
  return texts;
}

struct Run {
  std::vector<std::vector<int32_t>> corpus_ids;
  std::vector<std::vector<float>> f32, int8, bf16;
};

std::vector<std::vector<float>> embed_sentences(const std::string& dir, const svc::tok::Tokenizer& tok,
                                                svc::Precision precision) {
  svc::Encoder encoder(svc::acquire_weights(dir + "/config.json", dir + "/model.fp16.safetensors", precision), 1);
  std::vector<int32_t> ids, lengths;
  svc::tok::EncodeScratch scratch;
  for (const char* s : kSentences) lengths.push_back(static_cast<int32_t>(tok.encode(s, 128, scratch, ids, nullptr)));
  std::vector<float> out(static_cast<std::size_t>(kSentenceCount) * encoder.dim());
  encoder.embed(ids.data(), static_cast<int64_t>(ids.size()), lengths.data(), kSentenceCount, out.data());
  std::vector<std::vector<float>> rows;
  for (int i = 0; i < kSentenceCount; ++i)
    rows.emplace_back(out.begin() + i * encoder.dim(), out.begin() + (i + 1) * encoder.dim());
  return rows;
}

Run run(const std::string& dir, const std::vector<std::string>& corpus, bool checking) {
  const auto tok = svc::tok::Tokenizer::from_file(dir + "/tokenizer.json");
  Run r;
  svc::tok::EncodeScratch scratch;
  for (const std::string& text : corpus) {
    std::vector<int32_t> ids;
    tok->encode(text, 512, scratch, ids, nullptr);  // MiniLM's position limit
    r.corpus_ids.push_back(std::move(ids));
  }
  r.f32 = embed_sentences(dir, *tok, svc::Precision::kF32);
  if (checking) {
    r.int8 = embed_sentences(dir, *tok, svc::Precision::kInt8);
    r.bf16 = embed_sentences(dir, *tok, svc::Precision::kBf16);
  }
  return r;
}

void write_reference(const std::string& path, const Run& r) {
  std::ofstream out(path);
  for (const auto& ids : r.corpus_ids) {
    out << "ids " << ids.size();
    for (int32_t id : ids) out << ' ' << id;
    out << '\n';
  }
  char buf[32];
  for (const auto& row : r.f32) {
    out << "f32 " << row.size();
    for (float v : row) {
      std::snprintf(buf, sizeof buf, " %.9g", v);  // 9 digits round-trip any float
      out << buf;
    }
    out << '\n';
  }
  if (!out) throw std::runtime_error("cannot write " + path);
}

Run read_reference(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot open " + path);
  Run r;
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream fields(line);
    std::string kind;
    std::size_t n;
    fields >> kind >> n;
    if (kind == "ids") {
      std::vector<int32_t> ids(n);
      for (auto& id : ids) fields >> id;
      r.corpus_ids.push_back(std::move(ids));
    } else {
      std::vector<float> row(n);
      for (auto& v : row) fields >> v;
      r.f32.push_back(std::move(row));
    }
    if (!fields) throw std::runtime_error("bad reference line in " + path);
  }
  return r;
}

double cosine(const std::vector<float>& a, const std::vector<float>& b) {
  double dot = 0, na = 0, nb = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    dot += static_cast<double>(a[i]) * b[i];
    na += static_cast<double>(a[i]) * a[i];
    nb += static_cast<double>(b[i]) * b[i];
  }
  return dot / std::sqrt(na * nb);
}

// The fp32 GEMM on weights that are not fp16 values (so the fp32 panels, not the fp16 ones the
// checkpoint uses), at sizes with partial row blocks and panels, against a double-precision sum.
int check_gemm_f32() {
  int failures = 0;
  const int shapes[][3] = {{1, 5, 3}, {7, 33, 19}, {13, 50, 64}};
  for (const auto& shape : shapes) {
    const int m = shape[0], n = shape[1], k = shape[2];
    std::vector<float> a(static_cast<std::size_t>(m) * k), w(static_cast<std::size_t>(n) * k), bias(n);
    uint32_t state = 12345u + m;
    auto next = [&] {
      state = state * 1664525u + 1013904223u;
      return static_cast<float>(state >> 8) / 16777216.0f - 0.5f + 1e-4f / 3;  // never an fp16 value
    };
    for (float& v : a) v = next();
    for (float& v : w) v = next();
    for (float& v : bias) v = next();
    const svc::PackedF32 packed = svc::pack_f32(w.data(), bias.data(), n, k);
    std::vector<float> c(static_cast<std::size_t>(m) * n);
    svc::GemmArgs args;
    args.a = a.data();
    args.lda = k;
    args.m = m;
    args.c = c.data();
    args.ldc = n;
    svc::AlignedBuffer<float> scratch;
    svc::gemm_f32(args, packed, scratch, nullptr);
    double worst = 0;
    for (int r = 0; r < m; ++r)
      for (int j = 0; j < n; ++j) {
        double want = bias[j];
        for (int kk = 0; kk < k; ++kk) want += static_cast<double>(a[r * k + kk]) * w[j * k + kk];
        worst = std::max(worst, std::fabs(want - c[r * n + j]));
      }
    std::printf("gemm %dx%dx%d (%s panels): largest difference to double %.2e\n", m, n, k,
                packed.is_half() ? "fp16" : "fp32", worst);
    if (packed.is_half() || worst > 1e-5) {
      std::fprintf(stderr, "FAIL: gemm %dx%dx%d\n", m, n, k);
      ++failures;
    }
  }
  return failures;
}

int check(const Run& ours, const Run& ref) {
  int failures = 0;
  auto fail = [&](const std::string& what) {
    std::fprintf(stderr, "FAIL: %s\n", what.c_str());
    ++failures;
  };
  if (ours.corpus_ids.size() != ref.corpus_ids.size()) fail("corpus size differs from the reference");
  int mismatched = 0;
  for (std::size_t i = 0; i < std::min(ours.corpus_ids.size(), ref.corpus_ids.size()); ++i)
    if (ours.corpus_ids[i] != ref.corpus_ids[i] && ++mismatched <= 3)
      fail("token ids of corpus text " + std::to_string(i) + " differ");
  std::printf("tokenizer: %zu texts, %d differ\n", ours.corpus_ids.size(), mismatched);

  if (ref.f32.size() != static_cast<std::size_t>(kSentenceCount)) fail("reference holds the wrong sentence count");
  double worst_cos = 1, worst_diff = 0, int8_min = 1, int8_sum = 0, bf16_min = 1;
  for (std::size_t i = 0; i < std::min(ours.f32.size(), ref.f32.size()); ++i) {
    worst_cos = std::min(worst_cos, cosine(ours.f32[i], ref.f32[i]));
    for (std::size_t j = 0; j < ref.f32[i].size(); ++j)
      worst_diff = std::max(worst_diff, static_cast<double>(std::fabs(ours.f32[i][j] - ref.f32[i][j])));
    const double c8 = cosine(ours.int8[i], ref.f32[i]);
    int8_min = std::min(int8_min, c8);
    int8_sum += c8;
    bf16_min = std::min(bf16_min, cosine(ours.bf16[i], ref.f32[i]));
  }
  const double int8_mean = int8_sum / kSentenceCount;
  std::printf("fp32: lowest cosine %.7f, largest component difference %.2e\n", worst_cos, worst_diff);
  std::printf("int8: mean cosine to fp32 %.5f, lowest %.5f\n", int8_mean, int8_min);
  std::printf("bf16: lowest cosine to fp32 %.7f\n", bf16_min);
  if (worst_cos < 0.99999) fail("fp32 cosine below 0.99999");
  if (worst_diff > 1e-4) fail("fp32 component difference above 1e-4");
  if (int8_mean < 0.99) fail("int8 mean cosine below 0.99");
  if (int8_min < 0.97) fail("int8 lowest cosine below 0.97");
  if (bf16_min < 0.9999) fail("bf16 lowest cosine below 0.9999");
  return failures;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 5 || (std::strcmp(argv[3], "write") != 0 && std::strcmp(argv[3], "check") != 0)) {
    std::fprintf(stderr, "usage: %s <model dir> <corpus file> write|check <reference file>\n", argv[0]);
    return 2;
  }
  try {
    const bool writing = std::strcmp(argv[3], "write") == 0;
    std::printf("kernels: %s\n", svc::cpu_level_name());
    const Run ours = run(argv[1], read_corpus(argv[2]), !writing);
    if (writing) {
      write_reference(argv[4], ours);
      std::printf("wrote %s: %zu texts, %d sentences\n", argv[4], ours.corpus_ids.size(), kSentenceCount);
      return 0;
    }
    const int failures = check(ours, read_reference(argv[4])) + check_gemm_f32();
    std::printf(failures ? "%d failures\n" : "all arch parity checks passed\n", failures);
    return failures ? 1 : 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
}
