// The normalized word the encoder is building: its UTF-8 bytes, the source
// UTF-16 range of each byte, and the pending run of combining marks.
//
// The reference's NFD sorts each run of nonzero-class marks by class, stably
// and across character boundaries, and aligns the sorted run to the source by
// position (see NormalizedChar), so marks wait in the run until a class-0
// character, a removed class-0 mark or the word's end closes it, and then
// join the word in canonical order. Ordering a run is linear in its length (a
// counting sort by class), and every other step is O(1) per code point, so a
// word costs time linear in its input on any text.
//
// A word longer than WordPiece's max_input_chars_per_word can only become the
// unknown token, so past that length its bytes are not kept, only the source
// range the token will cover: a 1 MB word costs no more memory than a short one.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace svc::tok {

class Word {
 public:
  // Starts the words of one text.
  void start(size_t max_chars, bool with_offsets) {
    max_chars_ = max_chars;
    with_offsets_ = with_offsets;
    clear();
  }
  // Ends the current word (once it is tokenized).
  void clear();

  // A class-0 code point: closes the pending run, then joins the word.
  void add(char32_t cp, uint32_t begin, uint32_t end) {
    if (!marks_.empty()) close_run();
    put(cp, begin, end);
  }
  // A nonzero-class mark (NormalizedChar flags): waits in the run until the run closes.
  void add_mark(char32_t cp, uint8_t ccc, uint8_t flags, uint32_t begin, uint32_t end) {
    marks_.push_back({cp, begin, end, ccc, flags});
  }
  // Closes the pending run without adding anything (a removed class-0 mark).
  void end_run() {
    if (!marks_.empty()) close_run();
  }
  // `len` ASCII bytes that each normalize to one byte (`map[byte]`), from
  // source units begin, begin + 1, ...: the hot path of plain words.
  void add_ascii(const unsigned char* bytes, size_t len, const int16_t* map, uint32_t begin);

  // Code points in the word so far (marks still in the run not counted).
  size_t chars() const { return chars_; }
  // More code points than WordPiece accepts: the word is one unknown token.
  bool overlong() const { return chars_ > max_chars_; }
  // The word's UTF-8 bytes; only while it is not overlong.
  const std::string& bytes() const { return bytes_; }
  // UTF-16 range of the source character of one byte of bytes(); with offsets only.
  uint32_t source_begin(size_t byte) const { return src_begin_[byte]; }
  uint32_t source_end(size_t byte) const { return src_end_[byte]; }
  // UTF-16 start of the word's first code point and end of its last, in word order.
  uint32_t first_begin() const { return first_begin_; }
  uint32_t last_end() const { return last_end_; }

  // Frees buffers grown past `bytes` by one huge text.
  void shrink(size_t bytes);

 private:
  struct Mark {
    char32_t cp;
    uint32_t begin;
    uint32_t end;
    uint8_t ccc;
    uint8_t flags;
  };
  struct Range {
    uint32_t begin;
    uint32_t end;
  };

  void put(char32_t cp, uint32_t begin, uint32_t end);
  void close_run();

  size_t max_chars_ = 0;
  bool with_offsets_ = false;
  size_t chars_ = 0;
  uint32_t first_begin_ = 0;
  uint32_t last_end_ = 0;
  std::string bytes_;
  std::vector<uint32_t> src_begin_;
  std::vector<uint32_t> src_end_;
  std::vector<Mark> marks_;     // the pending run, in input order
  std::vector<Mark> ordered_;   // the run in canonical order, when input order was not
  std::vector<Range> sources_;  // the run's source characters, in input order
};

}  // namespace svc::tok
