// The SentencePiece Unigram pipeline of a tokenizer.json, as Hugging Face
// tokenizers runs it on the text between two added tokens: the normalizer
// steps (Precompiled charsmap, Replace), the pre-tokenizer (WhitespaceSplit,
// Metaspace), then the Unigram model on each pre-token: the Viterbi path of
// highest total score over the vocabulary's pieces, a character no piece
// covers scoring min_score - 10 as the unknown token, adjacent unknowns fused
// into one, which byte fallback spells as its UTF-8 bytes (`<0xXX>`).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "norm_text.h"
#include "precompiled.h"
#include "trie.h"
#include "wordpiece.h"

namespace svc::tok {

// One normalizer of the file's sequence, in order.
struct NormalizerStep {
  enum class Kind { kPrecompiled, kReplace } kind;
  std::string charsmap;  // kPrecompiled: the decoded blob
  // kReplace: `pattern` replaced by `content`; with min_repeat > 0, `pattern`
  // is one character and a run of at least min_repeat of it is replaced (the
  // regexes " {2,}" and " +" that converted SentencePiece files use).
  std::string pattern;
  size_t min_repeat = 0;
  std::string content;
};

enum class PrependScheme { kAlways, kFirst, kNever };

struct UnigramSpec {
  std::vector<std::pair<std::string, double>> vocab;  // the id is the index
  int32_t unk_id = -1;
  bool byte_fallback = false;
  std::vector<NormalizerStep> normalizers;
  bool whitespace_split = false;
  bool metaspace = false;
  std::string replacement = "\xE2\x96\x81";  // U+2581
  PrependScheme prepend = PrependScheme::kAlways;
  bool split = true;
};

// Buffers reused from one text to the next.
struct UnigramScratch {
  NormText source;
  NormText normalized;
  NormText step;
  NormText word;
  struct Best {
    double score;
    int32_t start;  // -1: no path ends here yet
    int32_t id;
  };
  std::vector<Best> best;
  std::vector<Piece> pieces;
};

class Unigram {
 public:
  explicit Unigram(const UnigramSpec& spec);

  int32_t unk_id() const { return unk_id_; }
  int32_t token_id(std::string_view token) const { return vocab_.find(token); }

  // Tokenizes the source text [p, p + n) (valid UTF-8; UTF-16 position `u16`
  // in the caller's string) and appends its ids, with UTF-16 offsets when
  // `offsets` is set, until `produced` reaches `budget`. Returns whether more
  // tokens may follow.
  bool encode(const unsigned char* p, size_t n, uint32_t u16, UnigramScratch& s, std::vector<int32_t>& ids,
              std::vector<int32_t>* offsets, size_t budget, size_t& produced) const;

  // The pieces of one pre-token (bytes of `word`), in order, byte ranges in the pre-token.
  void tokenize(const unsigned char* p, size_t n, UnigramScratch& s, std::vector<Piece>& out) const;

 private:
  void normalize(UnigramScratch& s) const;
  // Metaspace on one word of the normalized text, then its pre-tokens through the model; `first`: the
  // text's first word (where prepend_scheme "first" prepends).
  bool encode_word(const NormText& text, size_t from, size_t to, bool first, UnigramScratch& s,
                   std::vector<int32_t>& ids, std::vector<int32_t>* offsets, size_t budget, size_t& produced) const;

  VocabMap vocab_;
  Trie trie_;
  std::vector<double> scores_;
  double unk_score_;
  int32_t unk_id_;
  bool byte_fallback_;
  int32_t byte_ids_[256];
  std::vector<NormalizerStep> steps_;
  std::vector<std::unique_ptr<PrecompiledCharsmap>> charsmaps_;  // per step, for kPrecompiled
  bool whitespace_split_;
  bool metaspace_;
  std::string replacement_;
  PrependScheme prepend_;
  bool split_;
};

}  // namespace svc::tok
