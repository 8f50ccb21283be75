#include "unigram.h"

#include <algorithm>
#include <cstdio>
#include <stdexcept>

#include "unicode_tables.h"

namespace svc::tok {

namespace {

// What a character no piece covers scores below the lowest piece (the reference's K_UNK_PENALTY).
constexpr double kUnknownPenalty = 10.0;

inline bool is_white_space(char32_t cp) {
  return cp < 0x80 ? (cp == ' ' || (cp >= 0x09 && cp <= 0x0D)) : (char_record(cp).flags & kWhiteSpace) != 0;
}

// Replaces `pattern` in `in` (see NormalizerStep): each replacement comes
// from the source of the bytes it stands for.
void replace(const NormalizerStep& step, const NormText& in, NormText& out) {
  const std::string& pat = step.pattern;
  const size_t n = in.size();
  size_t i = 0;
  while (i < n) {
    if (in.bytes.compare(i, pat.size(), pat) != 0) {
      // Copy up to the next place the pattern could start.
      size_t next = in.bytes.find(pat[0], i + 1);
      if (next == std::string::npos) next = n;
      out.append_from(in, i, next);
      i = next;
      continue;
    }
    size_t j = i + pat.size();
    size_t count = 1;
    if (step.min_repeat > 0) {
      while (in.bytes.compare(j, pat.size(), pat) == 0) {
        j += pat.size();
        ++count;
      }
      if (count < step.min_repeat) {
        out.append_from(in, i, j);
        i = j;
        continue;
      }
    }
    if (step.content.empty()) {
      // Nothing to carry the source: the bytes are removed.
    } else {
      out.append(step.content.data(), step.content.size(), in.begin[i], in.end[j - 1]);
    }
    i = j;
  }
}

}  // namespace

Unigram::Unigram(const UnigramSpec& spec)
    : unk_id_(spec.unk_id),
      byte_fallback_(spec.byte_fallback),
      steps_(spec.normalizers),
      whitespace_split_(spec.whitespace_split),
      metaspace_(spec.metaspace),
      replacement_(spec.replacement),
      prepend_(spec.prepend),
      split_(spec.split) {
  if (spec.vocab.empty()) throw std::runtime_error("the Unigram vocabulary is empty");
  if (unk_id_ < 0 || static_cast<size_t>(unk_id_) >= spec.vocab.size()) {
    throw std::runtime_error("the Unigram model needs an unk_id inside its vocabulary");
  }
  std::vector<std::pair<std::string_view, int32_t>> entries;
  entries.reserve(spec.vocab.size());
  scores_.reserve(spec.vocab.size());
  double min_score = spec.vocab[0].second;
  for (size_t id = 0; id < spec.vocab.size(); ++id) {
    entries.emplace_back(spec.vocab[id].first, static_cast<int32_t>(id));
    scores_.push_back(spec.vocab[id].second);
    min_score = std::min(min_score, spec.vocab[id].second);
  }
  unk_score_ = min_score - kUnknownPenalty;
  vocab_.build(entries);
  trie_.build(entries);
  for (int b = 0; b < 256; ++b) {
    char name[8];
    std::snprintf(name, sizeof name, "<0x%02X>", b);
    byte_ids_[b] = vocab_.find(name);
  }
  for (const NormalizerStep& step : steps_) {
    charsmaps_.push_back(step.kind == NormalizerStep::Kind::kPrecompiled && !step.charsmap.empty()
                             ? std::make_unique<PrecompiledCharsmap>(step.charsmap)
                             : nullptr);
  }
}

void Unigram::tokenize(const unsigned char* p, size_t n, UnigramScratch& s, std::vector<Piece>& out) const {
  if (n == 0) return;
  auto& best = s.best;
  best.assign(n + 1, UnigramScratch::Best{0.0, -1, -1});
  size_t at = 0;
  while (at < n) {
    const double here = best[at].score;
    const size_t char_len = utf8_length(p[at]);
    bool single = false;
    trie_.for_each_prefix(p + at, n - at, [&](int32_t id, size_t len) {
      UnigramScratch::Best& target = best[at + len];
      const double score = here + scores_[static_cast<size_t>(id)];
      if (target.start < 0 || score > target.score) target = {score, static_cast<int32_t>(at), id};
      if (len == char_len) single = true;
    });
    if (!single) {
      UnigramScratch::Best& target = best[at + char_len];
      const double score = here + unk_score_;
      if (target.start < 0 || score > target.score) target = {score, static_cast<int32_t>(at), unk_id_};
    }
    at += char_len;
  }
  // Back from the end; adjacent unknowns become one piece, resolved below.
  const size_t first = out.size();
  size_t end = n;
  while (end > 0) {
    const UnigramScratch::Best& node = best[end];
    const auto start = static_cast<uint32_t>(node.start);
    if (node.id == unk_id_ && out.size() > first && out.back().id == unk_id_ && out.back().begin == end) {
      out.back().begin = start;
    } else {
      out.push_back(Piece{node.id, start, static_cast<uint32_t>(end)});
    }
    end = start;
  }
  std::reverse(out.begin() + static_cast<std::ptrdiff_t>(first), out.end());
}

void Unigram::normalize(UnigramScratch& s) const {
  NormText* current = &s.source;
  NormText* spare = &s.normalized;
  for (size_t k = 0; k < steps_.size(); ++k) {
    spare->clear();
    if (steps_[k].kind == NormalizerStep::Kind::kPrecompiled) {
      if (!charsmaps_[k]) continue;
      charsmaps_[k]->normalize(*current, *spare);
    } else {
      replace(steps_[k], *current, *spare);
    }
    std::swap(current, spare);
  }
  if (current != &s.normalized) std::swap(s.normalized, *current);
}

bool Unigram::encode(const unsigned char* p, size_t n, uint32_t u16, UnigramScratch& s, std::vector<int32_t>& ids,
                     std::vector<int32_t>* offsets, size_t budget, size_t& produced) const {
  // The source, one UTF-16 range per byte.
  const bool at_text_start = u16 == 0;
  NormText& src = s.source;
  src.bytes.assign(reinterpret_cast<const char*>(p), n);
  src.begin.resize(n);
  src.end.resize(n);
  for (size_t i = 0; i < n;) {
    const size_t len = utf8_length(p[i]);
    const uint32_t units = len == 4 ? 2 : 1;
    for (size_t k = i; k < i + len; ++k) {
      src.begin[k] = u16;
      src.end[k] = u16 + units;
    }
    i += len;
    u16 += units;
  }
  normalize(s);
  const NormText& text = s.normalized;
  const auto* t = reinterpret_cast<const unsigned char*>(text.bytes.data());
  const size_t size = text.size();
  if (!whitespace_split_) return encode_word(text, 0, size, at_text_start, s, ids, offsets, budget, produced);
  bool first = at_text_start;
  size_t i = 0;
  while (i < size) {
    // The next word: a run of characters that are not White_Space.
    size_t len = utf8_length(t[i]);
    if (is_white_space(utf8_decode(t + i, len))) {
      i += len;
      continue;
    }
    size_t j = i;
    while (j < size) {
      len = utf8_length(t[j]);
      if (is_white_space(utf8_decode(t + j, len))) break;
      j += len;
    }
    if (!encode_word(text, i, j, first, s, ids, offsets, budget, produced)) return false;
    first = false;
    i = j;
  }
  return true;
}

bool Unigram::encode_word(const NormText& text, size_t from, size_t to, bool first, UnigramScratch& s,
                          std::vector<int32_t>& ids, std::vector<int32_t>* offsets, size_t budget,
                          size_t& produced) const {
  if (from == to) return true;
  NormText& word = s.word;
  word.clear();
  if (metaspace_) {
    // Spaces become the replacement first, so a word that starts with one is not prefixed again.
    const bool starts_with_replacement =
        text.bytes[from] == ' ' || text.bytes.compare(from, replacement_.size(), replacement_) == 0;
    if (!starts_with_replacement &&
        (prepend_ == PrependScheme::kAlways || (prepend_ == PrependScheme::kFirst && first))) {
      word.append(replacement_.data(), replacement_.size(), text.begin[from], text.end[from]);
    }
    for (size_t i = from; i < to;) {
      if (text.bytes[i] == ' ') {
        word.append(replacement_.data(), replacement_.size(), text.begin[i], text.end[i]);
        ++i;
        continue;
      }
      size_t next = text.bytes.find(' ', i);
      if (next == std::string::npos || next > to) next = to;
      word.append_from(text, i, next);
      i = next;
    }
  } else {
    word.append_from(text, from, to);
  }
  const auto* w = reinterpret_cast<const unsigned char*>(word.bytes.data());
  const size_t n = word.size();
  size_t start = 0;
  while (start < n) {
    // Split before each replacement character (it begins the next pre-token).
    size_t end = n;
    if (metaspace_ && split_) {
      end = word.bytes.find(
          replacement_,
          start + (word.bytes.compare(start, replacement_.size(), replacement_) == 0 ? replacement_.size() : 0));
      if (end == std::string::npos) end = n;
    }
    s.pieces.clear();
    tokenize(w + start, end - start, s, s.pieces);
    for (const Piece& piece : s.pieces) {
      const size_t b = start + piece.begin;
      const size_t e = start + piece.end;
      int32_t id = piece.id;
      if (id == unk_id_) {
        // A fused run of unknown characters: a piece if the vocabulary has it, else bytes, else unknown.
        const int32_t whole = vocab_.find(word.bytes.data() + b, e - b);
        if (whole >= 0) {
          id = whole;
        } else if (byte_fallback_ && std::all_of(w + b, w + e, [&](unsigned char c) { return byte_ids_[c] >= 0; })) {
          for (size_t k = b; k < e; ++k) {
            if (produced == budget) return false;
            ids.push_back(byte_ids_[w[k]]);
            ++produced;
            if (offsets)
              offsets->insert(offsets->end(),
                              {static_cast<int32_t>(word.begin[b]), static_cast<int32_t>(word.end[e - 1])});
          }
          continue;
        }
      }
      if (produced == budget) return false;
      ids.push_back(id);
      ++produced;
      if (offsets)
        offsets->insert(offsets->end(), {static_cast<int32_t>(word.begin[b]), static_cast<int32_t>(word.end[e - 1])});
    }
    start = end;
  }
  return produced < budget;
}

}  // namespace svc::tok
