// Standalone test of the SentencePiece pieces of the tokenizer core:
//   cmake --build build-native --target unigram_test && build-native/unigram_test
// The Precompiled charsmap of the committed XLM-R-layout fixture (found from
// this file's path), the reference's cluster rule, and the Unigram Viterbi,
// unknown fusing and byte fallback on a hand-made vocabulary whose best paths
// are worked out below. Parity on real text runs from vitest
// (test/native/tokenizer-unigram-parity.test.ts).
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "io/json.h"
#include "test_check.h"
#include "tokenizer/precompiled.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/unigram.h"

namespace {

using svc::test::check;

std::string fixture_charsmap() {
  std::string root = __FILE__;
  root = root.substr(0, root.rfind("native/core/tokenizer/"));
  std::ifstream in(root + "test/fixtures/tokenizers/unigram-xlmr.json", std::ios::binary);
  std::ostringstream buffer;
  buffer << in.rdbuf();
  const svc::json::Value doc = svc::json::parse(buffer.str());
  return svc::tok::decode_base64(doc.find("normalizer")->find("precompiled_charsmap")->as_string());
}

std::string normalized(const svc::tok::PrecompiledCharsmap& map, const std::string& text,
                       std::vector<uint32_t>* begins = nullptr) {
  svc::tok::NormText in;
  svc::tok::NormText out;
  for (size_t i = 0; i < text.size(); ++i)
    in.append(&text[i], 1, static_cast<uint32_t>(i), static_cast<uint32_t>(i + 1));
  map.normalize(in, out);
  if (begins) *begins = out.begin;
  return out.bytes;
}

void test_charsmap() {
  const svc::tok::PrecompiledCharsmap map(fixture_charsmap());
  std::string_view out;
  check(map.transform(reinterpret_cast<const unsigned char*>("\xEF\xBC\xA1"), 3, &out) && out == "A",
        "fullwidth A maps to A");
  check(!map.transform(reinterpret_cast<const unsigned char*>("a"), 1, &out), "ASCII a maps to nothing");
  check(normalized(map, "\xEF\xAC\x81") == "fi", "the fi ligature becomes fi");
  check(normalized(map, "x\xE3\x80\x80y") == "x y", "an ideographic space becomes a space");
  // e + U+0301 is one cluster under 6 bytes, replaced whole by its composed form; the result's
  // one character comes from the cluster's first.
  std::vector<uint32_t> begins;
  check(normalized(map, "e\xCC\x81", &begins) == "\xC3\xA9", "e + combining acute composes");
  check(begins.size() == 2 && begins[0] == 0 && begins[1] == 0, "the composed character comes from the e");
  // CR LF is one cluster: the shortest key that starts it is CR alone, so LF goes with it.
  check(normalized(map, "a\r\nb") == "a b", "CR LF becomes one space");
  check(normalized(map, "a\rb") == "a b", "a lone CR becomes a space");
}

const char* kTinyUnigram = R"({
  "added_tokens": [{"id": 0, "content": "<s>", "normalized": false}, {"id": 2, "content": "</s>", "normalized": false}],
  "normalizer": null,
  "pre_tokenizer": {"type": "Metaspace", "replacement": "\u2581", "prepend_scheme": "always", "split": true},
  "post_processor": {"type": "RobertaProcessing", "sep": ["</s>", 2], "cls": ["<s>", 0]},
  "model": {"type": "Unigram", "unk_id": 1, "byte_fallback": BYTE_FALLBACK,
            "vocab": [["<s>", 0.0], ["<unk>", 0.0], ["</s>", 0.0], ["\u2581", -2.0], ["\u2581ab", -3.0],
                      ["\u2581a", -1.0], ["b", -1.5], ["c", -4.0], ["bc", -4.5], ["<0xC3>", 0.0], ["<0xA9>", 0.0]]}
})";

std::vector<int32_t> encode(const svc::tok::Tokenizer& t, const std::string& text) {
  svc::tok::EncodeScratch scratch;
  std::vector<int32_t> ids;
  t.encode(text, 100, scratch, ids, nullptr);
  return ids;
}

std::shared_ptr<const svc::tok::Tokenizer> tiny(bool byte_fallback) {
  std::string json = kTinyUnigram;
  json.replace(json.find("BYTE_FALLBACK"), 13, byte_fallback ? "true" : "false");
  return svc::tok::Tokenizer::from_json(json);
}

void test_viterbi() {
  const auto t = tiny(false);
  // "▁ab": ▁ab (-3) beats ▁a + b (-2.5)? No: -2.5 > -3, so ▁a b.
  check(encode(*t, "ab") == std::vector<int32_t>{0, 5, 6, 2}, "ab is ▁a b, the higher total score");
  // "▁abc": ▁a + bc (-5.5) against ▁a + b + c (-6.5): ▁a bc.
  check(encode(*t, "abc") == std::vector<int32_t>{0, 5, 8, 2}, "abc is ▁a bc");
  // Two characters no piece covers fuse into one unknown token.
  check(encode(*t, "a\xC3\xA9\xC3\xA9") == std::vector<int32_t>{0, 5, 1, 2}, "adjacent unknowns fuse");
  check(encode(*t, "a b") == std::vector<int32_t>{0, 5, 3, 6, 2}, "each space starts a pre-token");
  const auto fallback = tiny(true);
  check(encode(*fallback, "a\xC3\xA9") == std::vector<int32_t>{0, 5, 9, 10, 2}, "byte fallback spells é as bytes");
  // No <0x..> piece for the bytes of ü: the whole fused run stays unknown.
  check(encode(*fallback, "a\xC3\xBC") == std::vector<int32_t>{0, 5, 1, 2}, "a byte without a piece stays unknown");
}

// TruncationSide::kStart on a Unigram file: <s> + the last pieces that fit + </s>.
void test_truncate_start() {
  const auto t = tiny(false);
  svc::tok::EncodeScratch scratch;
  std::vector<int32_t> ids;
  std::vector<int32_t> offsets;
  bool cut = false;
  t->encode("a b", 4, scratch, ids, &offsets, &cut, nullptr, svc::tok::TruncationSide::kStart);
  check(ids == std::vector<int32_t>{0, 3, 6, 2} && cut, "start: ▁ b are the last pieces of a b");
  check(offsets.size() == 2 * ids.size(), "start: one offset pair per id kept");
  ids.clear();
  t->encode("a b", 5, scratch, ids, nullptr, &cut, nullptr, svc::tok::TruncationSide::kStart);
  check(ids == std::vector<int32_t>{0, 5, 3, 6, 2} && !cut, "start: a text that fits is whole and not cut");
}

}  // namespace

int main() {
  test_charsmap();
  test_viterbi();
  test_truncate_start();
  return svc::test::exit_code();
}
