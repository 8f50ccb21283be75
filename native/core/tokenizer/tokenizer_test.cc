// Standalone test of the tokenizer core, without Node:
//   cmake -S . -B build-native -DSVC_NATIVE_TESTS=ON && cmake --build build-native -j2 && build-native/tokenizer_test
// The full parity suite runs from vitest against HF tokenizers; this checks the
// pieces on a tiny hand-made vocabulary.
#include <cstdio>
#include <stdexcept>
#include <string>
#include <vector>

#include "io/json.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/trie.h"

namespace {

int failures = 0;

void check(bool ok, const char* what) {
  if (!ok) {
    std::fprintf(stderr, "FAIL: %s\n", what);
    ++failures;
  }
}

const char* kTinyTokenizer = R"({
  "added_tokens": [{"id": 4, "content": "[MASK]", "single_word": false, "lstrip": false, "rstrip": false,
                    "normalized": false, "special": true}],
  "normalizer": {"type": "BertNormalizer", "clean_text": true, "handle_chinese_chars": true,
                 "strip_accents": null, "lowercase": true},
  "pre_tokenizer": {"type": "BertPreTokenizer"},
  "post_processor": {"type": "BertProcessing", "sep": ["[SEP]", 3], "cls": ["[CLS]", 2]},
  "truncation": {"max_length": 64},
  "model": {"type": "WordPiece", "unk_token": "[UNK]", "continuing_subword_prefix": "##",
            "max_input_chars_per_word": 12,
            "vocab": {"[PAD]": 0, "[UNK]": 1, "[CLS]": 2, "[SEP]": 3, "[MASK]": 4, "un": 5, "##believ": 6,
                      "##able": 7, "cafe": 8, "!": 9, "\u4e2d": 10, "a": 11, "##b": 12}}
})";

std::vector<int32_t> encode(const svc::tok::Tokenizer& t, const std::string& text, size_t max_length,
                            std::vector<int32_t>* offsets = nullptr) {
  svc::tok::EncodeScratch scratch;
  std::vector<int32_t> ids;
  t.encode(text, max_length, scratch, ids, offsets);
  return ids;
}

}  // namespace

int main() {
  const svc::json::Value doc = svc::json::parse(R"({"a": [1, -2.5e1, true, null], "b": "x\u00e9\ud83d\ude00"})");
  check(doc.find("a")->items()[1].as_number() == -25.0, "json numbers");
  check(doc.find("b")->as_string() == "x\xc3\xa9\xf0\x9f\x98\x80", "json unicode escapes");
  bool threw = false;
  try {
    svc::json::parse("{\"a\": }");
  } catch (const std::runtime_error&) {
    threw = true;
  }
  check(threw, "json rejects bad documents");

  svc::tok::Trie trie;
  trie.build({{"un", 1}, {"unbe", 2}, {"u", 3}});
  const auto* word = reinterpret_cast<const unsigned char*>("unbelievable");
  check(trie.longest_prefix(word, 12).first == 2 && trie.longest_prefix(word, 12).second == 4, "trie longest");
  check(trie.longest_prefix(word, 3).first == 1, "trie stops at the input's end");
  check(trie.longest_prefix(reinterpret_cast<const unsigned char*>("x"), 1).first == -1, "trie miss");

  const auto tokenizer = svc::tok::Tokenizer::from_json(kTinyTokenizer);
  check(encode(*tokenizer, "UnBelievable!", 64) == std::vector<int32_t>{2, 5, 6, 7, 9, 3}, "wordpiece pieces");
  check(encode(*tokenizer, "Caf\xc3\xa9 \xe4\xb8\xad[MASK]", 64) == std::vector<int32_t>{2, 8, 10, 4, 3},
        "accents, CJK and added tokens");
  check(encode(*tokenizer, "abbbbbbbbbbbb ab", 64) == std::vector<int32_t>{2, 1, 11, 12, 3}, "long words are unknown");
  check(encode(*tokenizer, "unbelievable", 4) == std::vector<int32_t>{2, 5, 6, 3}, "truncation keeps specials");
  std::vector<int32_t> offsets;
  encode(*tokenizer, "\xf0\x9f\x98\x80 un!", 64, &offsets);
  check(offsets == std::vector<int32_t>{0, 0, 0, 2, 3, 5, 5, 6, 0, 0}, "UTF-16 offsets");
  check(tokenizer->truncation_max_length() == 64, "file truncation length");

  // Random bytes, malformed UTF-8 included: no crash, and offsets stay inside the text.
  uint32_t state = 12345;
  auto next = [&] { return state = state * 1664525u + 1013904223u; };
  for (int round = 0; round < 2000; ++round) {
    std::string text(next() % 300, '\0');
    for (char& c : text) c = static_cast<char>(next() >> 24);
    std::vector<int32_t> offs;
    const std::vector<int32_t> ids = encode(*tokenizer, text, 1 + next() % 64, &offs);
    bool ok = offs.size() == 2 * ids.size() && ids.size() >= 2 && ids.front() == 2 && ids.back() == 3;
    for (size_t k = 0; k < offs.size(); k += 2) ok = ok && offs[k] <= offs[k + 1] && offs[k + 1] <= int32_t(text.size());
    if (!ok) {
      check(false, "random bytes");
      break;
    }
  }

  if (failures == 0) std::printf("tokenizer_test: all passed\n");
  return failures == 0 ? 0 : 1;
}
