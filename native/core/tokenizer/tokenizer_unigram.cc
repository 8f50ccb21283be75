// Tokenizer::encode for SentencePiece files: the text is cut at added tokens
// (matched on the raw text, longest first, as the reference does), each piece
// in between goes through the Unigram pipeline, and the special tokens of the
// post-processor go around the whole.
#include <string>

#include "tokenizer.h"
#include "unicode_tables.h"

namespace svc::tok {

namespace {

// The byte length of a valid UTF-8 sequence at p, or 0.
size_t valid_utf8(const unsigned char* p, size_t n) {
  const unsigned char c = p[0];
  if (c < 0x80) return 1;
  const size_t len = c >= 0xC2 && c <= 0xDF ? 2 : c >= 0xE0 && c <= 0xEF ? 3 : c >= 0xF0 && c <= 0xF4 ? 4 : 0;
  if (len == 0 || len > n) return 0;
  for (size_t k = 1; k < len; ++k) {
    if ((p[k] & 0xC0) != 0x80) return 0;
  }
  const char32_t cp = utf8_decode(p, len);
  if ((len == 3 && (cp < 0x800 || (cp >= 0xD800 && cp <= 0xDFFF))) || (len == 4 && (cp < 0x10000 || cp > 0x10FFFF)))
    return 0;
  return len;
}

// V8 hands us valid UTF-8; other callers' malformed bytes become U+FFFD one byte at a time.
std::string_view checked_utf8(std::string_view text, std::string& repaired) {
  const auto* p = reinterpret_cast<const unsigned char*>(text.data());
  size_t i = 0;
  while (i < text.size()) {
    const size_t len = valid_utf8(p + i, text.size() - i);
    if (len == 0) break;
    i += len;
  }
  if (i == text.size()) return text;
  repaired.assign(text.substr(0, i));
  while (i < text.size()) {
    const size_t len = valid_utf8(p + i, text.size() - i);
    if (len == 0) {
      repaired.append("\xEF\xBF\xBD");
      ++i;
    } else {
      repaired.append(text.substr(i, len));
      i += len;
    }
  }
  return repaired;
}

inline uint32_t units_of(size_t utf8_len) { return utf8_len == 4 ? 2 : 1; }

bool white_space_at(const unsigned char* p, size_t n, size_t* len) {
  *len = utf8_length(p[0]);
  if (*len > n) return false;
  const char32_t cp = utf8_decode(p, *len);
  return cp < 0x80 ? (cp == ' ' || (cp >= 0x09 && cp <= 0x0D)) : (char_record(cp).flags & kWhiteSpace) != 0;
}

}  // namespace

size_t Tokenizer::encode_unigram(std::string_view raw, size_t max_length, EncodeScratch& scratch,
                                 std::vector<int32_t>& ids, std::vector<int32_t>* offsets, bool* truncated) const {
  std::string repaired;
  const std::string_view text = checked_utf8(raw, repaired);
  const size_t first = ids.size();
  const size_t specials = special_token_count();
  const size_t kept = max_length > specials ? max_length - specials : 0;
  // One token more than is kept tells whether the text was cut (see encode_impl).
  const size_t budget = truncated != nullptr ? kept + 1 : kept;
  for (int32_t id : prefix_ids_) {
    ids.push_back(id);
    if (offsets) offsets->insert(offsets->end(), {0, 0});
  }
  size_t produced = 0;
  const auto* p = reinterpret_cast<const unsigned char*>(text.data());
  const size_t n = text.size();
  size_t segment = 0;  // start of the text since the last added token
  uint32_t segment_u16 = 0;
  size_t i = 0;
  uint32_t u16 = 0;
  bool more = budget > 0;
  while (more && i < n) {
    const AddedToken* t = added_first_byte_[p[i]] ? match_added(p + i, n - i) : nullptr;
    if (t == nullptr) {
      const size_t len = utf8_length(p[i]);
      i += len;
      u16 += units_of(len);
      continue;
    }
    // The token, widened over the White_Space its lstrip / rstrip take.
    size_t end = i;
    uint32_t end_u16 = u16;
    for (size_t k = i; k < i + t->content.size();) {
      const size_t len = utf8_length(p[k]);
      k += len;
      end_u16 += units_of(len);
    }
    end += t->content.size();
    const uint32_t content_end_u16 = end_u16;
    size_t begin = i;
    uint32_t begin_u16 = u16;
    if (t->lstrip) {
      // Back over White_Space to the segment's start: walk it forward, remembering where the trailing run began.
      size_t run = segment;
      uint32_t run_u16 = segment_u16;
      uint32_t at_u16 = segment_u16;
      for (size_t k = segment; k < i;) {
        size_t len;
        const bool space = white_space_at(p + k, i - k, &len);
        if (!space) {
          run = k + len;
          run_u16 = at_u16 + units_of(len);
        }
        k += len;
        at_u16 += units_of(len);
      }
      begin = run;
      begin_u16 = run_u16;
    }
    if (t->rstrip) {
      size_t len;
      while (end < n && white_space_at(p + end, n - end, &len)) {
        end += len;
        end_u16 += units_of(len);
      }
    }
    if (begin > segment) {
      more =
          unigram_->encode(p + segment, begin - segment, segment_u16, scratch.unigram, ids, offsets, budget, produced);
      if (!more) break;
    }
    if (produced == budget) break;
    ids.push_back(t->id);
    ++produced;
    if (offsets) {
      if (trim_offsets_) {
        const bool keep_leading = begin_u16 == 0 && add_prefix_space_;
        offsets->insert(offsets->end(),
                        {static_cast<int32_t>(keep_leading ? begin_u16 : u16), static_cast<int32_t>(content_end_u16)});
      } else {
        offsets->insert(offsets->end(), {static_cast<int32_t>(begin_u16), static_cast<int32_t>(end_u16)});
      }
    }
    more = produced < budget;
    i = segment = end;
    u16 = segment_u16 = end_u16;
  }
  if (more && segment < n) {
    unigram_->encode(p + segment, n - segment, segment_u16, scratch.unigram, ids, offsets, budget, produced);
  }
  if (truncated != nullptr) {
    *truncated = produced > kept;
    if (*truncated) {
      ids.pop_back();
      if (offsets) offsets->resize(offsets->size() - 2);
    }
  }
  for (int32_t id : suffix_ids_) {
    ids.push_back(id);
    if (offsets) offsets->insert(offsets->end(), {0, 0});
  }
  return ids.size() - first;
}

}  // namespace svc::tok
