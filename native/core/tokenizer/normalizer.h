// BertNormalizer and BertPreTokenizer, applied one code point at a time.
//
// The reference pipeline is: clean text (drop NUL, U+FFFD and Cc/Cf/Co other
// than \t\n\r; whitespace becomes ' '), space out CJK ideographs, NFD + drop
// Mn (strip accents), lowercase; then split on White_Space (dropped) and on
// punctuation (kept, one token each). Every step maps one code point to zero
// or more code points without looking at its neighbours, so we precompute
// the result per character: a 128-entry table for ASCII (no Unicode lookup on
// the hot path) and the generated two-stage tables for everything else.
#pragma once

#include <cstdint>

namespace svc::tok {

struct BertNormalizerOptions {
  bool clean_text = true;
  bool handle_chinese_chars = true;
  bool strip_accents = true;  // a null strip_accents in tokenizer.json follows lowercase
  bool lowercase = true;
};

// What the pre-tokenizer does with a normalized character.
enum class SplitKind : uint8_t {
  kWord,   // part of the current word
  kSpace,  // ends the current word and is dropped
  kPunct,  // ends the current word and is a word by itself
  kDrop,   // removed by the normalizer; does not end the word
};

// The most code points one input character can normalize to (NFD <= 4, each
// lowercased to <= 3, stripped marks included), with room to spare.
constexpr int kMaxExpansion = 16;

// One code point of a normalized character, with the canonical combining
// class it had in the NFD stream: the reference's NFD sorts each run of
// nonzero-class marks by class, across character boundaries, so the encoder
// reorders marks that survive accent stripping (spacing marks, Mc).
//
// The reference aligns the sorted run to the source by position: each code
// point that begins its character's decomposition takes the next source
// character of the run, in input order, and every other one takes the source
// of the code point before it. Marks that accent stripping removes still hold
// their place in that count, so they come out too, flagged kStripped.
struct NormalizedChar {
  char32_t cp;
  uint8_t ccc;
  uint8_t flags;  // kContinues, kStripped
};
// Not the first code point of its source character's normalized form.
constexpr uint8_t kContinues = 1;
// A nonzero-class Mn mark: removed, after it has taken part in the ordering.
constexpr uint8_t kStripped = 2;
// Stands for a removed class-0 character (a Mn mark of class 0): nothing is
// emitted, but it ends the current run of combining marks.
constexpr char32_t kRunBreak = 0xFFFFFFFF;

class Normalizer {
 public:
  // `enabled` false: no normalizer in the file, only the pre-tokenizer runs.
  Normalizer(bool enabled, const BertNormalizerOptions& options);

  struct AsciiEntry {
    SplitKind kind;
    char byte;  // the normalized byte (lowercased when asked)
  };
  const AsciiEntry& ascii(unsigned char c) const { return ascii_[c]; }

  // Normalizes one non-ASCII code point into `out` (kMaxExpansion slots) and
  // returns how many code points it became (0: removed). `isolate` is set when
  // the character must stand alone (a CJK ideograph).
  int expand(char32_t cp, NormalizedChar* out, bool* isolate) const;

  // How the pre-tokenizer treats an already-normalized code point.
  static SplitKind split_kind(char32_t cp);

 private:
  bool enabled_;
  BertNormalizerOptions options_;
  AsciiEntry ascii_[128];
};

}  // namespace svc::tok
