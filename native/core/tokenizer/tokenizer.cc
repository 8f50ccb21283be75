#include "tokenizer.h"

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <sstream>
#include <stdexcept>
#include <tuple>

namespace svc::tok {

namespace {

// Decodes one UTF-8 sequence; malformed input (not produced by V8, but
// possible from C++ callers) decodes as U+FFFD one byte at a time.
inline size_t decode_utf8(const unsigned char* p, size_t n, char32_t* cp) {
  const unsigned char c = p[0];
  if (c >= 0xC2 && c <= 0xDF && n >= 2 && (p[1] & 0xC0) == 0x80) {
    *cp = ((c & 0x1Fu) << 6) | (p[1] & 0x3Fu);
    return 2;
  }
  if (c >= 0xE0 && c <= 0xEF && n >= 3 && (p[1] & 0xC0) == 0x80 && (p[2] & 0xC0) == 0x80) {
    const char32_t v = ((c & 0x0Fu) << 12) | ((p[1] & 0x3Fu) << 6) | (p[2] & 0x3Fu);
    if (v >= 0x800 && (v < 0xD800 || v > 0xDFFF)) {
      *cp = v;
      return 3;
    }
  }
  if (c >= 0xF0 && c <= 0xF4 && n >= 4 && (p[1] & 0xC0) == 0x80 && (p[2] & 0xC0) == 0x80 && (p[3] & 0xC0) == 0x80) {
    const char32_t v = ((c & 0x07u) << 18) | ((p[1] & 0x3Fu) << 12) | ((p[2] & 0x3Fu) << 6) | (p[3] & 0x3Fu);
    if (v >= 0x10000 && v <= 0x10FFFF) {
      *cp = v;
      return 4;
    }
  }
  *cp = 0xFFFD;
  return 1;
}

// UTF-16 length of valid UTF-8: one unit per sequence, two for 4-byte ones.
inline uint32_t utf16_length(const unsigned char* p, size_t n) {
  uint32_t units = 0;
  for (size_t i = 0; i < n; ++i) {
    if ((p[i] & 0xC0) != 0x80) units += p[i] >= 0xF0 ? 2 : 1;
  }
  return units;
}

}  // namespace

Tokenizer::Tokenizer(TokenizerSpec spec)
    : normalizer_(spec.has_normalizer, spec.normalizer),
      added_(std::move(spec.added_tokens)),
      prefix_ids_(std::move(spec.prefix_ids)),
      suffix_ids_(std::move(spec.suffix_ids)),
      truncation_max_length_(spec.truncation_max_length),
      trim_offsets_(spec.trim_offsets),
      add_prefix_space_(spec.add_prefix_space) {
  if (spec.unigram) {
    unigram_ = std::make_unique<const Unigram>(*spec.unigram);
    unk_id_ = unigram_->unk_id();
  } else {
    model_.emplace(spec.vocab, spec.unk_token, spec.continuing_subword_prefix, spec.max_input_chars_per_word);
    unk_id_ = model_->unk_id();
  }
  std::stable_sort(added_.begin(), added_.end(),
                   [](const AddedToken& a, const AddedToken& b) { return a.content.size() > b.content.size(); });
  for (const AddedToken& t : added_) added_first_byte_[static_cast<unsigned char>(t.content[0])] = true;
  for (int b = 0; b < 256; ++b) {
    plain_ascii_[b] = -1;
    if (b < 0x80 && !added_first_byte_[b] &&
        normalizer_.ascii(static_cast<unsigned char>(b)).kind == SplitKind::kWord) {
      plain_ascii_[b] = static_cast<unsigned char>(normalizer_.ascii(static_cast<unsigned char>(b)).byte);
    }
  }
}

std::shared_ptr<const Tokenizer> Tokenizer::from_json(std::string_view json) {
  return std::make_shared<const Tokenizer>(parse_tokenizer_json(json));
}

std::shared_ptr<const Tokenizer> Tokenizer::from_file(const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const auto size = fs::file_size(path, ec);
  if (ec) throw std::runtime_error("cannot read tokenizer file " + path + ": " + ec.message());
  const auto mtime = fs::last_write_time(path, ec).time_since_epoch().count();
  using Key = std::tuple<std::string, uintmax_t, long long>;
  static std::mutex mutex;
  static std::map<Key, std::weak_ptr<const Tokenizer>> cache;
  const Key key{path, size, static_cast<long long>(mtime)};
  {
    std::lock_guard<std::mutex> lock(mutex);
    if (auto found = cache.find(key); found != cache.end()) {
      if (auto alive = found->second.lock()) return alive;
    }
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read tokenizer file " + path);
  std::ostringstream buffer;
  buffer << in.rdbuf();
  std::shared_ptr<const Tokenizer> built;
  try {
    built = from_json(buffer.str());
  } catch (const std::exception& e) {
    throw std::runtime_error(path + ": " + e.what());
  }
  std::lock_guard<std::mutex> lock(mutex);
  // Drop entries whose tokenizers are gone, then remember this one.
  for (auto it = cache.begin(); it != cache.end();) it = it->second.expired() ? cache.erase(it) : std::next(it);
  cache[key] = built;
  return built;
}

int32_t Tokenizer::token_id(std::string_view token) const {
  for (const AddedToken& t : added_) {
    if (t.content == token) return t.id;
  }
  return unigram_ ? unigram_->token_id(token) : model_->token_id(token);
}

const AddedToken* Tokenizer::match_added(const unsigned char* p, size_t n) const {
  for (const AddedToken& t : added_) {
    if (t.content.size() <= n && std::memcmp(p, t.content.data(), t.content.size()) == 0) return &t;
  }
  return nullptr;
}

size_t Tokenizer::encode_whole(std::string_view text, EncodeScratch& scratch, std::vector<int32_t>& ids,
                               std::vector<int32_t>* offsets) const {
  // A length no text reaches: the budget is never spent, so nothing is cut.
  constexpr size_t kUnbounded = static_cast<size_t>(-1) / 2;
  return unigram_  ? encode_unigram(text, kUnbounded, scratch, ids, offsets, nullptr)
         : offsets ? encode_impl<true>(text, kUnbounded, scratch, ids, offsets, nullptr)
                   : encode_impl<false>(text, kUnbounded, scratch, ids, nullptr, nullptr);
}

size_t Tokenizer::encode(std::string_view text, size_t max_length, EncodeScratch& scratch, std::vector<int32_t>& ids,
                         std::vector<int32_t>* offsets, bool* truncated, size_t* unknown, TruncationSide side) const {
  const size_t first = ids.size();
  size_t appended;
  if (side == TruncationSide::kStart) {
    // The last tokens depend on the whole text (a word's pieces are read from its start), so the whole text is
    // tokenized and its first tokens after the prefix are dropped: [CLS] + the last tokens that fit + [SEP].
    const size_t first_offset = offsets != nullptr ? offsets->size() : 0;
    const size_t whole = encode_whole(text, scratch, ids, offsets);
    const size_t specials = special_token_count();
    const size_t room = max_length > specials ? max_length - specials : 0;
    const size_t tokens = whole - specials;
    const size_t dropped = tokens > room ? tokens - room : 0;
    if (dropped > 0) {
      const auto from = static_cast<std::ptrdiff_t>(first + prefix_ids_.size());
      ids.erase(ids.begin() + from, ids.begin() + from + static_cast<std::ptrdiff_t>(dropped));
      if (offsets != nullptr) {
        const auto at = static_cast<std::ptrdiff_t>(first_offset + 2 * prefix_ids_.size());
        offsets->erase(offsets->begin() + at, offsets->begin() + at + static_cast<std::ptrdiff_t>(2 * dropped));
      }
    }
    if (truncated != nullptr) *truncated = dropped > 0;
    appended = whole - dropped;
  } else {
    appended = unigram_  ? encode_unigram(text, max_length, scratch, ids, offsets, truncated)
               : offsets ? encode_impl<true>(text, max_length, scratch, ids, offsets, truncated)
                         : encode_impl<false>(text, max_length, scratch, ids, nullptr, truncated);
  }
  // Counted on the ids kept, after truncation: what the encoder reads.
  if (unknown != nullptr) *unknown = static_cast<size_t>(std::count(ids.begin() + first, ids.end(), unk_id_));
  return appended;
}

template <bool kOffsets>
size_t Tokenizer::encode_impl(std::string_view text, size_t max_length, EncodeScratch& s, std::vector<int32_t>& ids,
                              std::vector<int32_t>* offsets, bool* truncated) const {
  const size_t first = ids.size();
  const size_t specials = special_token_count();
  // Special tokens never get truncated away; the text gets what is left.
  const size_t kept = max_length > specials ? max_length - specials : 0;
  // To tell whether the text was cut, produce one token more than is kept and drop it at the end:
  // the tokens before it do not depend on what follows them.
  const size_t budget = truncated != nullptr ? kept + 1 : kept;
  for (int32_t id : prefix_ids_) {
    ids.push_back(id);
    if constexpr (kOffsets) offsets->insert(offsets->end(), {0, 0});
  }
  size_t produced = 0;
  Word& word = s.word;
  word.start(model_->max_input_chars_per_word(), kOffsets);

  // Ends the current word: WordPiece it and emit pieces until the budget is
  // spent. Returns whether more tokens may follow.
  auto flush = [&]() -> bool {
    word.end_run();
    if (word.chars() == 0) return true;
    if (word.overlong()) {
      // Its bytes were not kept: the whole word is one unknown token.
      ids.push_back(model_->unk_id());
      ++produced;
      if constexpr (kOffsets) {
        offsets->insert(offsets->end(),
                        {static_cast<int32_t>(word.first_begin()), static_cast<int32_t>(word.last_end())});
      }
    } else {
      s.pieces.clear();
      model_->tokenize(word.bytes().data(), word.bytes().size(), word.chars(), s.pieces);
      for (const Piece& piece : s.pieces) {
        if (produced == budget) break;
        ids.push_back(piece.id);
        ++produced;
        if constexpr (kOffsets) {
          offsets->push_back(static_cast<int32_t>(word.source_begin(piece.begin)));
          offsets->push_back(static_cast<int32_t>(word.source_end(piece.end - 1)));
        }
      }
    }
    word.clear();
    return produced < budget;
  };

  const auto* p = reinterpret_cast<const unsigned char*>(text.data());
  const size_t n = text.size();
  size_t i = 0;
  uint32_t u16 = 0;  // UTF-16 position of p[i] in the caller's string
  bool more = budget > 0;
  while (more && i < n) {
    if constexpr (!kOffsets) {
      // The word can only become one unknown token, and that token fills the
      // budget: nothing further in the text can change the ids. (With offsets,
      // the token's end is the word's end, so the scan goes on to find it.)
      if (produced + 1 == budget && word.overlong()) break;
    }
    const unsigned char c = p[i];
    if (plain_ascii_[c] >= 0) {
      // The common case: a run of ASCII letters and digits, copied (lowercased) in one go.
      size_t j = i + 1;
      while (j < n && plain_ascii_[p[j]] >= 0) ++j;
      const auto len = static_cast<uint32_t>(j - i);
      word.add_ascii(p + i, len, plain_ascii_, u16);
      i = j;
      u16 += len;
      continue;
    }
    if (added_first_byte_[c]) {
      if (const AddedToken* t = match_added(p + i, n - i)) {
        const uint32_t units = utf16_length(p + i, t->content.size());
        if (!flush()) break;
        ids.push_back(t->id);
        ++produced;
        if constexpr (kOffsets)
          offsets->insert(offsets->end(), {static_cast<int32_t>(u16), static_cast<int32_t>(u16 + units)});
        i += t->content.size();
        u16 += units;
        more = produced < budget;
        continue;
      }
    }
    if (c < 0x80) {
      const Normalizer::AsciiEntry& e = normalizer_.ascii(c);
      switch (e.kind) {
        case SplitKind::kWord:
          word.add(static_cast<unsigned char>(e.byte), u16, u16 + 1);
          break;
        case SplitKind::kSpace:
          more = flush();
          break;
        case SplitKind::kPunct:
          if ((more = flush())) {
            word.add(static_cast<unsigned char>(e.byte), u16, u16 + 1);
            more = flush();
          }
          break;
        case SplitKind::kDrop:  // removed before NFD: does not end a run of marks
          break;
      }
      ++i;
      ++u16;
      continue;
    }
    char32_t cp;
    const size_t len = decode_utf8(p + i, n - i, &cp);
    const uint32_t units = cp >= 0x10000 ? 2 : 1;
    NormalizedChar expanded[kMaxExpansion];
    bool isolate = false;
    const int count = normalizer_.expand(cp, expanded, &isolate);
    if (isolate) more = flush();
    for (int j = 0; j < count && more; ++j) {
      const NormalizedChar& x = expanded[j];
      if (x.cp == kRunBreak) {
        word.end_run();
        continue;
      }
      if (x.ccc != 0 && (x.flags & kStripped)) {
        word.add_mark(x.cp, x.ccc, x.flags, u16, u16 + units);
        continue;
      }
      switch (Normalizer::split_kind(x.cp)) {
        case SplitKind::kWord:
          if (x.ccc == 0) {
            word.add(x.cp, u16, u16 + units);
          } else {
            word.add_mark(x.cp, x.ccc, x.flags, u16, u16 + units);
          }
          break;
        case SplitKind::kSpace:
          more = flush();
          break;
        case SplitKind::kPunct:
          if ((more = flush())) {
            word.add(x.cp, u16, u16 + units);
            more = flush();
          }
          break;
        case SplitKind::kDrop:
          break;
      }
    }
    if (isolate && more) more = flush();
    i += len;
    u16 += units;
  }
  if (more) flush();
  if (truncated != nullptr) {
    *truncated = produced > kept;
    if (*truncated) {
      ids.pop_back();
      if constexpr (kOffsets) offsets->resize(offsets->size() - 2);
    }
  }
  for (int32_t id : suffix_ids_) {
    ids.push_back(id);
    if constexpr (kOffsets) offsets->insert(offsets->end(), {0, 0});
  }
  return ids.size() - first;
}

template size_t Tokenizer::encode_impl<true>(std::string_view, size_t, EncodeScratch&, std::vector<int32_t>&,
                                             std::vector<int32_t>*, bool*) const;
template size_t Tokenizer::encode_impl<false>(std::string_view, size_t, EncodeScratch&, std::vector<int32_t>&,
                                              std::vector<int32_t>*, bool*) const;

}  // namespace svc::tok
