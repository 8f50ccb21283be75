// A tokenizer read from a Hugging Face tokenizer.json: added tokens matched on
// the raw text, then either BERT's pipeline (BertNormalizer, BertPreTokenizer,
// WordPiece) or SentencePiece's (Precompiled and Replace normalizers,
// WhitespaceSplit and Metaspace, Unigram; see unigram.h), and the
// post-processor's special tokens. Encoding truncates to a maximum
// length that includes the special tokens; padding is never applied.
//
// A Tokenizer is immutable once built, so one instance serves any number of
// threads; each thread brings its own EncodeScratch.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "normalizer.h"
#include "unigram.h"
#include "word.h"
#include "wordpiece.h"

namespace svc::tok {

// Which end of a text that has more tokens than fit loses them: kEnd keeps its first tokens (the
// default, as Hugging Face's truncation `direction: 'right'`), kStart its last ones (`direction: 'left'`).
// Special tokens are kept either way.
enum class TruncationSide { kEnd, kStart };

struct AddedToken {
  std::string content;
  int32_t id;
  bool lstrip = false;  // takes the White_Space before it (the text before it loses it)
  bool rstrip = false;  // takes the White_Space after it
};

struct TokenizerSpec {
  std::vector<std::pair<std::string, int32_t>> vocab;
  std::string unk_token = "[UNK]";
  std::string continuing_subword_prefix = "##";
  size_t max_input_chars_per_word = 100;
  bool has_normalizer = false;
  BertNormalizerOptions normalizer;
  std::vector<AddedToken> added_tokens;
  std::vector<int32_t> prefix_ids;   // special tokens before the text ([CLS])
  std::vector<int32_t> suffix_ids;   // special tokens after it ([SEP])
  size_t truncation_max_length = 0;  // the file's own setting (0: none); callers pass their own
  // Set when the model is Unigram: the whole pipeline after the added tokens (the fields above
  // that describe WordPiece and BertNormalizer are then unused).
  std::shared_ptr<UnigramSpec> unigram;
  // RobertaProcessing's trim_offsets: an added token's offsets leave out the White_Space its lstrip / rstrip
  // took (but for the text's first token when add_prefix_space is set).
  bool trim_offsets = false;
  bool add_prefix_space = false;
};

// Reads the parts of a tokenizer.json this tokenizer understands; throws
// std::runtime_error naming the first unsupported or malformed part.
TokenizerSpec parse_tokenizer_json(std::string_view json);

// Buffers reused from one text to the next, so encoding allocates nothing
// once they have grown.
struct EncodeScratch {
  Word word;
  std::vector<Piece> pieces;
  UnigramScratch unigram;
};

class Tokenizer {
 public:
  explicit Tokenizer(TokenizerSpec spec);

  static std::shared_ptr<const Tokenizer> from_json(std::string_view json);
  // Loads a file; instances are shared process-wide while in use (same path,
  // size and modification time), so worker threads do not each hold a copy.
  static std::shared_ptr<const Tokenizer> from_file(const std::string& path);

  // Appends the ids of one UTF-8 text, special tokens included, at most
  // `max_length` of them; with `offsets`, appends one UTF-16 [start, end) pair
  // per id (special tokens get [0, 0]). With `truncated`, sets it to whether the text had more
  // tokens than fit (the ids are the same either way). With `unknown`, sets it to how many of the ids
  // appended are the unknown token: the share of a text the vocabulary does not know (emoji, most CJK
  // characters). `side` says which tokens a text that does not fit loses (its offsets, `truncated` and
  // `unknown` describe the ids kept). Returns the number of ids appended.
  size_t encode(std::string_view text, size_t max_length, EncodeScratch& scratch, std::vector<int32_t>& ids,
                std::vector<int32_t>* offsets, bool* truncated = nullptr, size_t* unknown = nullptr,
                TruncationSide side = TruncationSide::kEnd) const;

  size_t special_token_count() const { return prefix_ids_.size() + suffix_ids_.size(); }
  size_t truncation_max_length() const { return truncation_max_length_; }
  int32_t token_id(std::string_view token) const;

 private:
  template <bool kOffsets>
  size_t encode_impl(std::string_view text, size_t max_length, EncodeScratch& scratch, std::vector<int32_t>& ids,
                     std::vector<int32_t>* offsets, bool* truncated) const;
  size_t encode_unigram(std::string_view text, size_t max_length, EncodeScratch& scratch, std::vector<int32_t>& ids,
                        std::vector<int32_t>* offsets, bool* truncated) const;
  // The longest added token at the start of `p`, or nullptr.
  const AddedToken* match_added(const unsigned char* p, size_t n) const;
  // Appends the ids of the whole text, special tokens included, with nothing cut.
  size_t encode_whole(std::string_view text, EncodeScratch& scratch, std::vector<int32_t>& ids,
                      std::vector<int32_t>* offsets) const;

  std::optional<WordPiece> model_;          // BERT's pipeline, or
  std::unique_ptr<const Unigram> unigram_;  // SentencePiece's
  int32_t unk_id_;
  Normalizer normalizer_;
  std::vector<AddedToken> added_;  // longest first, so the first match is the longest
  bool added_first_byte_[256] = {};
  // Per byte: its normalized form when it is an ASCII byte that simply
  // continues a word (no split, no drop, no added token starts with it), else -1.
  int16_t plain_ascii_[256];
  std::vector<int32_t> prefix_ids_;
  std::vector<int32_t> suffix_ids_;
  size_t truncation_max_length_;
  bool trim_offsets_;
  bool add_prefix_space_;
};

}  // namespace svc::tok
