#include "normalizer.h"

#include "unicode_tables.h"

namespace svc::tok {

namespace {

// BertNormalizer's "control": Cc, Cf and Co (the categories the reference's
// is_other() covers), except \t \n \r which count as whitespace.
constexpr uint8_t kOtherFlags = kControl | kFormat | kPrivateUse;

bool is_removed_by_clean_text(char32_t cp, uint8_t flags) {
  if (cp == 0 || cp == 0xFFFD) return true;
  if (cp == '\t' || cp == '\n' || cp == '\r') return false;
  return (flags & kOtherFlags) != 0;
}

bool is_ascii_punctuation(char32_t c) {
  return (c >= 0x21 && c <= 0x2F) || (c >= 0x3A && c <= 0x40) || (c >= 0x5B && c <= 0x60) || (c >= 0x7B && c <= 0x7E);
}

// Appends the lowercase of `c` (one or more code points), keeping the class
// `c` had when NFD ordered it (lowercasing comes after NFD); code points past
// the first continue `c`. Stripped marks are gone before lowercasing.
int append_lower(NormalizedChar c, NormalizedChar* out, int n) {
  if (c.cp < 0x80 || c.cp == kRunBreak) {
    out[n++] = {(c.cp >= 'A' && c.cp <= 'Z') ? c.cp + 32 : c.cp, c.ccc, c.flags};
    return n;
  }
  const CharRecord& r = char_record(c.cp);
  if (r.lower_len == 0 || (c.flags & kStripped)) {
    out[n++] = c;
    return n;
  }
  for (int i = 0; i < r.lower_len && n < kMaxExpansion; ++i) {
    out[n++] = {kMappingPool[r.lower_offset + i], c.ccc, static_cast<uint8_t>(i == 0 ? c.flags : c.flags | kContinues)};
  }
  return n;
}

}  // namespace

SplitKind Normalizer::split_kind(char32_t cp) {
  if (cp < 0x80) {
    if (cp == ' ' || (cp >= 0x09 && cp <= 0x0D)) return SplitKind::kSpace;
    return is_ascii_punctuation(cp) ? SplitKind::kPunct : SplitKind::kWord;
  }
  const uint8_t flags = char_record(cp).flags;
  if (flags & kWhiteSpace) return SplitKind::kSpace;
  if (flags & kPunctuation) return SplitKind::kPunct;
  return SplitKind::kWord;
}

Normalizer::Normalizer(bool enabled, const BertNormalizerOptions& options) : enabled_(enabled), options_(options) {
  for (int c = 0; c < 128; ++c) {
    AsciiEntry& e = ascii_[c];
    e.byte = static_cast<char>(c);
    if (enabled_ && options_.lowercase && c >= 'A' && c <= 'Z') e.byte = static_cast<char>(c + 32);
    const uint8_t flags = char_record(static_cast<char32_t>(c)).flags;
    if (enabled_ && options_.clean_text && is_removed_by_clean_text(static_cast<char32_t>(c), flags)) {
      e.kind = SplitKind::kDrop;
    } else {
      e.kind = split_kind(static_cast<char32_t>(c));
    }
  }
}

int Normalizer::expand(char32_t cp, NormalizedChar* out, bool* isolate) const {
  *isolate = false;
  if (!enabled_) {
    out[0] = {cp, 0, 0};
    return 1;
  }
  const CharRecord& r = char_record(cp);
  if (options_.clean_text) {
    if (is_removed_by_clean_text(cp, r.flags)) return 0;
    if (r.flags & kWhiteSpace) {
      out[0] = {' ', 0, 0};
      return 1;
    }
  }
  if (options_.handle_chinese_chars && (r.flags & kChineseChar)) *isolate = true;

  // Strip accents: canonical decomposition, then drop nonspacing marks.
  NormalizedChar decomposed[kMaxExpansion];
  int count = 0;
  auto keep_unless_mark = [&](char32_t part, const CharRecord& pr, bool first) {
    const uint8_t continues = first ? 0 : kContinues;
    if (!(pr.flags & kMarkNonspacing)) {
      decomposed[count++] = {part, pr.ccc, continues};
    } else if (pr.ccc == 0) {
      decomposed[count++] = {kRunBreak, 0, 0};
    } else {
      decomposed[count++] = {part, pr.ccc, static_cast<uint8_t>(continues | kStripped)};
    }
  };
  if (options_.strip_accents) {
    if (cp >= kHangulFirst && cp <= kHangulLast) {
      char32_t jamo[3];
      const int n = decompose_hangul(cp, jamo);
      for (int i = 0; i < n; ++i) decomposed[count++] = {jamo[i], 0, static_cast<uint8_t>(i == 0 ? 0 : kContinues)};
    } else if (r.nfd_len == 0) {
      keep_unless_mark(cp, r, true);
    } else {
      for (int i = 0; i < r.nfd_len && count < kMaxExpansion; ++i) {
        const char32_t part = kMappingPool[r.nfd_offset + i];
        keep_unless_mark(part, char_record(part), i == 0);
      }
    }
  } else {
    decomposed[count++] = {cp, 0, 0};
  }

  if (!options_.lowercase) {
    for (int i = 0; i < count; ++i) out[i] = decomposed[i];
    return count;
  }
  int n = 0;
  for (int i = 0; i < count; ++i) n = append_lower(decomposed[i], out, n);
  return n;
}

}  // namespace svc::tok
