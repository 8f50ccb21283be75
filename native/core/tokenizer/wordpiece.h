// WordPiece: greedy longest-match-first splitting of one pre-token into
// vocabulary pieces, as BERT defines it. Pieces after the first are looked up
// with the continuing-subword prefix ("##"); a word with a part that matches
// nothing, or longer than max_input_chars_per_word, becomes the unknown token.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "trie.h"

namespace svc::tok {

// String -> id with all keys in one arena and open addressing, so a lookup
// hashes the bytes in place: no std::string is built.
class VocabMap {
 public:
  void build(const std::vector<std::pair<std::string_view, int32_t>>& entries);
  // The id of the key, or -1.
  int32_t find(const char* data, size_t size) const;
  int32_t find(std::string_view key) const { return find(key.data(), key.size()); }
  size_t max_key_size() const { return max_key_size_; }

 private:
  struct Slot {
    uint64_t hash = 0;
    uint32_t offset = 0;
    uint32_t size = 0;
    int32_t id = -1;
  };
  std::string arena_;
  std::vector<Slot> slots_;
  size_t mask_ = 0;
  size_t max_key_size_ = 0;
};

// One vocabulary piece of a word: its id and its byte range in the word.
struct Piece {
  int32_t id;
  uint32_t begin;
  uint32_t end;
};

class WordPiece {
 public:
  WordPiece(const std::vector<std::pair<std::string, int32_t>>& vocab, std::string unk_token,
            std::string continuing_subword_prefix, size_t max_input_chars_per_word);

  // Appends the pieces of one word (valid UTF-8 of `chars` code points) to `out`.
  void tokenize(const char* word, size_t size, size_t chars, std::vector<Piece>& out) const;

  // The id of a whole token (for special tokens), or -1.
  int32_t token_id(std::string_view token) const { return whole_.find(token); }
  int32_t unk_id() const { return unk_id_; }
  // Longer words (in code points) are one unknown token.
  size_t max_input_chars_per_word() const { return max_chars_; }

 private:
  VocabMap whole_;     // every token, for token_id()
  Trie first_trie_;    // every token, for the first piece of a word
  Trie continuation_;  // tokens that start with the prefix, prefix removed
  int32_t unk_id_;
  size_t max_chars_;
};

}  // namespace svc::tok
