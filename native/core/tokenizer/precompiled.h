// The Precompiled normalizer of SentencePiece models: a charsmap (the
// `precompiled_charsmap` of tokenizer.json, base64 of sentencepiece's
// normalizer_spec) that maps character sequences to their normalized form.
//
// The blob is a little-endian uint32 byte size of a darts-clone double-array
// trie, the trie's 32-bit units, then the normalized strings, NUL-terminated;
// a trie leaf's value is the offset of its string.
//
// It is applied the way the reference (HF tokenizers' Precompiled) applies it,
// which differs from sentencepiece itself: the text is cut into extended
// grapheme clusters; a cluster under 6 bytes is replaced whole by the string
// of the *shortest* key that starts it, if any; otherwise each of its
// characters is replaced by its own mapping or kept.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "norm_text.h"

namespace svc::tok {

class PrecompiledCharsmap {
 public:
  // `blob`: the decoded precompiled_charsmap; throws std::runtime_error when malformed.
  explicit PrecompiledCharsmap(std::string_view blob);

  // The normalized form of the shortest key that starts [p, p + n), or false.
  bool transform(const unsigned char* p, size_t n, std::string_view* out) const;

  // Appends the normalized form of `in` to `out`.
  void normalize(const NormText& in, NormText& out) const;

 private:
  std::string_view normalized_at(uint32_t offset) const;

  std::vector<uint32_t> units_;
  std::string normalized_;
  // Per ASCII byte: the offset of its normalized string, or -1 when it maps to itself.
  int32_t ascii_[128];
};

// Decodes standard base64 (padding optional); throws on other characters.
std::string decode_base64(std::string_view text);

}  // namespace svc::tok
