#include "grapheme_tables.h"

namespace svc::tok {

GraphemeKind grapheme_kind(char32_t cp) {
  if (cp < 0x80) return cp < 0x20 || cp == 0x7F ? GraphemeKind::kControl : GraphemeKind::kOther;
  if ((cp >= 0x1100 && cp <= 0x115F) || (cp >= 0xA960 && cp <= 0xA97C)) return GraphemeKind::kHangulL;
  if ((cp >= 0x1160 && cp <= 0x11A7) || (cp >= 0xD7B0 && cp <= 0xD7C6)) return GraphemeKind::kHangulV;
  if ((cp >= 0x11A8 && cp <= 0x11FF) || (cp >= 0xD7CB && cp <= 0xD7FB)) return GraphemeKind::kHangulT;
  if (cp >= 0xAC00 && cp <= 0xD7A3) {
    return (cp - 0xAC00) % 28 == 0 ? GraphemeKind::kHangulLV : GraphemeKind::kHangulLVT;
  }
  size_t lo = 0;
  size_t hi = kGraphemeRangeCount;
  while (lo < hi) {
    const size_t mid = (lo + hi) / 2;
    if (kGraphemeRanges[mid].last < cp) {
      lo = mid + 1;
    } else {
      hi = mid;
    }
  }
  if (lo < kGraphemeRangeCount && kGraphemeRanges[lo].first <= cp) {
    return static_cast<GraphemeKind>(kGraphemeRanges[lo].kind);
  }
  return GraphemeKind::kOther;
}

}  // namespace svc::tok
