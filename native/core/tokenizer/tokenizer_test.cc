// Standalone test of the tokenizer core, without Node:
//   cmake -S . -B build-native -DSVC_NATIVE_TESTS=ON && cmake --build build-native -j2 && build-native/tokenizer_test
//   build-native/tokenizer_test [fuzz inputs] [tokenizer.json]
// The full parity suite runs from vitest against HF tokenizers; this checks the
// pieces on a tiny hand-made vocabulary, then feeds the fuzz entry point seeded
// hostile inputs (2000 unless given), on the tiny vocabulary and on the file's.
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "io/json.h"
#include "test_check.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/trie.h"

namespace {

using svc::test::check;
using svc::test::failures;

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
                      "##able": 7, "cafe": 8, "!": 9, "\u4e2d": 10, "a": 11, "##b": 12,
                      "##\ud834\udd65": 13, "##\ud834\udd6d": 14}}
})";

std::vector<int32_t> encode(const svc::tok::Tokenizer& t, const std::string& text, size_t max_length,
                            std::vector<int32_t>* offsets = nullptr) {
  svc::tok::EncodeScratch scratch;
  std::vector<int32_t> ids;
  t.encode(text, max_length, scratch, ids, offsets);
  return ids;
}

// The fuzz entry point: any bytes. The first byte picks maxLength (a small
// one, or the largest) and the rest is the text. Checks what holds for every
// input: [CLS] ... [SEP] within maxLength, offsets inside the text and in
// order within each token, and the same ids with and without offsets or the
// truncation flag (the encoder stops early only where the ids cannot change).
bool fuzz_one(const svc::tok::Tokenizer& t, const uint8_t* data, size_t size) {
  if (size == 0) return true;
  const size_t max_length = (data[0] & 0x80) ? 100000 : 2 + data[0] % 64;
  const std::string text(reinterpret_cast<const char*>(data + 1), size - 1);
  std::vector<int32_t> offsets;
  const std::vector<int32_t> ids = encode(t, text, max_length, &offsets);
  bool cut = false;
  svc::tok::EncodeScratch scratch;
  std::vector<int32_t> told;
  t.encode(text, max_length, scratch, told, nullptr, &cut);
  bool ok = ids.size() >= 2 && ids.size() <= max_length && offsets.size() == 2 * ids.size() &&
            encode(t, text, max_length) == ids && told == ids && (!cut || ids.size() == max_length);
  for (size_t k = 0; ok && k < offsets.size(); k += 2) {
    ok = offsets[k] >= 0 && offsets[k] <= offsets[k + 1] && offsets[k + 1] <= static_cast<int32_t>(text.size());
  }
  // Cut from the start: as many ids, the same flag, and the whole encoding's last tokens between the special ones.
  const std::vector<int32_t> whole = encode(t, text, 100000);
  std::vector<int32_t> tail;
  bool tail_cut = false;
  t.encode(text, max_length, scratch, tail, nullptr, &tail_cut, nullptr, svc::tok::TruncationSide::kStart);
  ok = ok && tail.size() == ids.size() && tail_cut == cut && tail.front() == whole.front() &&
       tail.back() == whole.back() &&
       std::equal(tail.begin() + 1, tail.end() - 1, whole.end() + 1 - static_cast<std::ptrdiff_t>(tail.size()));
  return ok;
}

// Seeded hostile inputs for fuzz_one: random bytes mixed with long runs of
// the parts that stress the tokenizer (combining marks of several classes,
// run breakers, malformed and 4-byte UTF-8, added-token prefixes, CJK, Hangul),
// mostly short, a few up to 64 KiB.
void fuzz(const svc::tok::Tokenizer& t, long inputs, uint32_t seed) {
  static const char* const kParts[] = {"a",
                                       "B",
                                       " ",
                                       "!",
                                       "[MASK]",
                                       "[MAS",
                                       "\x01",
                                       "\xe0\xa4\x80",
                                       "\xcc\x81",
                                       "\xf0\x9d\x85\xa5",
                                       "\xf0\x9d\x85\xad",
                                       "\xe0\xbd\xb1",
                                       "\xe3\x80\xaa",
                                       "\xed\xa0\x80",
                                       "\xff",
                                       "\xf0\x9f\x98\x80",
                                       "\xe4\xb8\xad",
                                       "\xea\xb0\x81",
                                       "\xce\x90",
                                       "\xc4\xb0",
                                       "\xc3\xa9"};
  constexpr size_t kPartCount = sizeof(kParts) / sizeof(kParts[0]);
  uint32_t state = seed;
  auto next = [&] { return state = state * 1664525u + 1013904223u; };
  std::string input;
  size_t bytes = 0;
  for (long round = 0; round < inputs; ++round) {
    const size_t limit = next() % 16 == 0 ? 64 * 1024 : 300;
    const size_t size = next() % limit;
    input.assign(1, static_cast<char>(next() >> 24));
    while (input.size() < size) {
      const uint32_t r = next();
      if (r % 4 == 0) {
        input.push_back(static_cast<char>(r >> 24));
      } else {
        const char* part = kParts[(r >> 8) % kPartCount];
        // Sometimes a long run of one part: runs of marks, one long word.
        for (uint32_t k = (r >> 20) % 8 == 0 ? (r >> 4) % 2000 : 1; k > 0 && input.size() < size; --k) input += part;
      }
    }
    bytes += input.size();
    if (!fuzz_one(t, reinterpret_cast<const uint8_t*>(input.data()), input.size())) {
      check(false, "fuzz input");
      return;
    }
  }
  std::printf("fuzz: %ld inputs, %zu bytes\n", inputs, bytes);
}

// TruncationSide::kStart keeps [CLS] + the last tokens that fit + [SEP], with their own offsets, and says a text was
// cut only when tokens were dropped.
void test_truncate_start(const svc::tok::Tokenizer& t) {
  using svc::tok::TruncationSide;
  svc::tok::EncodeScratch scratch;
  std::vector<int32_t> ids;
  std::vector<int32_t> offsets;
  bool cut = false;
  size_t unknown = 99;
  // UnBelievable! \u4e2d is [CLS] un ##believ ##able ! \u4e2d [SEP].
  t.encode("UnBelievable! \xe4\xb8\xad", 4, scratch, ids, &offsets, &cut, &unknown, TruncationSide::kStart);
  check(ids == std::vector<int32_t>{2, 9, 10, 3} && cut && unknown == 0, "start: the last tokens are kept");
  check(offsets == std::vector<int32_t>{0, 0, 12, 13, 14, 15, 0, 0}, "start: the kept tokens keep their offsets");
  ids.clear();
  t.encode("unbelievable", 4, scratch, ids, nullptr, &cut, nullptr, TruncationSide::kStart);
  check(ids == std::vector<int32_t>{2, 6, 7, 3} && cut, "start: a word's last pieces are kept");
  ids.clear();
  t.encode("unbelievable", 5, scratch, ids, nullptr, &cut, nullptr, TruncationSide::kStart);
  check(ids == std::vector<int32_t>{2, 5, 6, 7, 3} && !cut, "start: a text that just fits is not cut");
  ids.assign({7});  // another text's ids before this one's stay
  t.encode("un \xf0\x9f\x98\x80", 3, scratch, ids, nullptr, &cut, &unknown, TruncationSide::kStart);
  check(ids == std::vector<int32_t>{7, 2, 1, 3} && cut && unknown == 1, "start: unknown ids counted on the ids kept");
  ids.clear();
  t.encode("un", 2, scratch, ids, nullptr, &cut, nullptr, TruncationSide::kStart);
  check(ids == std::vector<int32_t>{2, 3} && cut, "start: no room but the special tokens");
}

}  // namespace

int main(int argc, char** argv) {
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

  // Canonical ordering: U+1D165 (class 216) moves before U+1D16D (226); the
  // sorted marks take the run's sources by position, as the reference aligns them.
  offsets.clear();
  check(encode(*tokenizer, "a\xf0\x9d\x85\xad\xf0\x9d\x85\xa5", 64, &offsets) == std::vector<int32_t>{2, 11, 13, 14, 3},
        "marks in canonical order");
  check(offsets == std::vector<int32_t>{0, 0, 0, 1, 1, 3, 3, 5, 0, 0}, "sorted marks take sources by position");
  // A word past max_input_chars_per_word is one unknown token over the whole word.
  offsets.clear();
  check(encode(*tokenizer, "x abbbbbbbbbbbb!", 64, &offsets) == std::vector<int32_t>{2, 1, 1, 9, 3}, "overlong word");
  check(offsets == std::vector<int32_t>{0, 0, 0, 1, 2, 15, 15, 16, 0, 0}, "overlong word offsets");
  check(encode(*tokenizer, "x " + std::string(1 << 20, 'b'), 4) == std::vector<int32_t>{2, 1, 1, 3},
        "an overlong word fills the budget");

  // The unknown ids of the ids kept: an emoji and an overlong word are one each, a truncated one is not counted.
  {
    svc::tok::EncodeScratch scratch;
    std::vector<int32_t> ids{7};  // ids already in the buffer are another text's
    size_t unknown = 99;
    tokenizer->encode("\xf0\x9f\x98\x80 un! abbbbbbbbbbbb", 64, scratch, ids, nullptr, nullptr, &unknown);
    check(unknown == 2 && ids == std::vector<int32_t>{7, 2, 1, 5, 9, 1, 3}, "unknown ids counted");
    tokenizer->encode("un \xf0\x9f\x98\x80", 3, scratch, ids, nullptr, nullptr, &unknown);
    check(unknown == 0, "unknown ids past the cut are not counted");
    tokenizer->encode("", 64, scratch, ids, nullptr, nullptr, &unknown);
    check(unknown == 0, "an empty text has no unknown ids");
  }

  test_truncate_start(*tokenizer);

  const long inputs = argc > 1 ? std::strtol(argv[1], nullptr, 10) : 2000;
  fuzz(*tokenizer, inputs, 12345);
  if (argc > 2) {
    std::ifstream in(argv[2], std::ios::binary);
    std::ostringstream json;
    json << in.rdbuf();
    fuzz(*svc::tok::Tokenizer::from_json(json.str()), inputs, 54321);
  }

  if (failures == 0) std::printf("tokenizer_test: all passed\n");
  return failures == 0 ? 0 : 1;
}
