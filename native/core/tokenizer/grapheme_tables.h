// Grapheme_Cluster_Break classes, as far as the Precompiled normalizer needs
// them (see precompiled.h): the generated ranges (gen_grapheme_tables.mjs) for
// marks that attach to the character before them, prepended characters and
// controls, and Hangul jamo and syllables by formula.
#pragma once

#include <cstddef>
#include <cstdint>

namespace svc::tok {

enum class GraphemeKind : uint8_t {
  kOther = 0,
  kAttach = 1,   // Extend, SpacingMark, ZWJ: joins the cluster before it
  kPrepend = 2,  // joins the cluster after it
  kControl = 3,  // Control, CR, LF: a cluster of its own (except CR LF)
  kHangulL,
  kHangulV,
  kHangulT,
  kHangulLV,
  kHangulLVT,
};

struct GraphemeRange {
  char32_t first;
  char32_t last;
  uint8_t kind;
};

extern const char kGraphemeUnicodeVersion[];
extern const GraphemeRange kGraphemeRanges[];
extern const size_t kGraphemeRangeCount;

GraphemeKind grapheme_kind(char32_t cp);

// Whether a cluster boundary falls between two adjacent code points (the
// rules of UAX #29 the normalizer can observe: CR LF, controls, Hangul
// syllable sequences, attaching marks and prepended characters).
inline bool grapheme_break(char32_t prev, GraphemeKind pk, char32_t next, GraphemeKind nk) {
  using K = GraphemeKind;
  if (prev == '\r' && next == '\n') return false;
  if (pk == K::kControl || nk == K::kControl) return true;
  if (pk == K::kHangulL && (nk == K::kHangulL || nk == K::kHangulV || nk == K::kHangulLV || nk == K::kHangulLVT))
    return false;
  if ((pk == K::kHangulLV || pk == K::kHangulV) && (nk == K::kHangulV || nk == K::kHangulT)) return false;
  if ((pk == K::kHangulLVT || pk == K::kHangulT) && nk == K::kHangulT) return false;
  if (nk == K::kAttach) return false;
  return pk != K::kPrepend;
}

}  // namespace svc::tok
