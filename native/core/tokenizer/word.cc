#include "word.h"

#include <algorithm>

#include "normalizer.h"
#include "utf8.h"

namespace svc::tok {

namespace {

// Runs up to this long are ordered in place: cheaper than clearing 256 buckets.
constexpr size_t kInsertionSortRun = 16;

}  // namespace

void Word::clear() {
  chars_ = 0;
  bytes_.clear();
  src_begin_.clear();
  src_end_.clear();
  marks_.clear();
}

void Word::put(char32_t cp, uint32_t begin, uint32_t end) {
  if (chars_ == 0) first_begin_ = begin;
  last_end_ = end;
  if (++chars_ > max_chars_) return;  // overlong: only the range matters now
  svc::append_utf8(bytes_, cp);
  if (with_offsets_) {
    src_begin_.resize(bytes_.size(), begin);
    src_end_.resize(bytes_.size(), end);
  }
}

void Word::add_ascii(const unsigned char* bytes, size_t len, const int16_t* map, uint32_t begin) {
  if (!marks_.empty()) close_run();
  if (chars_ == 0) first_begin_ = begin;
  last_end_ = begin + static_cast<uint32_t>(len);
  const size_t keep = chars_ >= max_chars_ ? 0 : std::min(len, max_chars_ - chars_);
  chars_ += len;
  for (size_t k = 0; k < keep; ++k) bytes_.push_back(static_cast<char>(map[bytes[k]]));
  if (with_offsets_) {
    for (size_t k = 0; k < keep; ++k) {
      src_begin_.push_back(begin + static_cast<uint32_t>(k));
      src_end_.push_back(begin + static_cast<uint32_t>(k) + 1);
    }
  }
}

void Word::close_run() {
  const size_t n = marks_.size();
  const bool in_order = std::adjacent_find(marks_.begin(), marks_.end(),
                                           [](const Mark& a, const Mark& b) { return a.ccc > b.ccc; }) == marks_.end();
  if (in_order) {
    // Position and source agree: each mark keeps its own source.
    for (const Mark& m : marks_) {
      if (!(m.flags & kStripped)) put(m.cp, m.begin, m.end);
    }
    marks_.clear();
    return;
  }
  sources_.clear();
  for (const Mark& m : marks_) {
    if (!(m.flags & kContinues)) sources_.push_back({m.begin, m.end});
  }
  // The run opens either with a new character or with the rest of the one
  // before it; the latter's source is the first mark's own.
  Range last{marks_[0].begin, marks_[0].end};
  if (n <= kInsertionSortRun) {
    // Stable: a mark moves left only past marks of a strictly higher class.
    for (size_t k = 1; k < n; ++k) {
      const Mark m = marks_[k];
      size_t j = k;
      for (; j > 0 && marks_[j - 1].ccc > m.ccc; --j) marks_[j] = marks_[j - 1];
      marks_[j] = m;
    }
  } else {
    // Stable counting sort by class: linear in the run, whatever its order.
    size_t start[257] = {};
    for (const Mark& m : marks_) ++start[m.ccc + 1];
    for (int c = 1; c <= 256; ++c) start[c] += start[c - 1];
    ordered_.resize(n);
    for (const Mark& m : marks_) ordered_[start[m.ccc]++] = m;
    marks_.swap(ordered_);
  }
  size_t next = 0;
  for (const Mark& m : marks_) {
    if (!(m.flags & kContinues)) last = sources_[next++];
    if (!(m.flags & kStripped)) put(m.cp, last.begin, last.end);
  }
  marks_.clear();
}

void Word::shrink(size_t bytes) {
  if (bytes_.capacity() > bytes) std::string().swap(bytes_);
  if (src_begin_.capacity() * sizeof(uint32_t) > bytes) std::vector<uint32_t>().swap(src_begin_);
  if (src_end_.capacity() * sizeof(uint32_t) > bytes) std::vector<uint32_t>().swap(src_end_);
  if (marks_.capacity() * sizeof(Mark) > bytes) std::vector<Mark>().swap(marks_);
  if (ordered_.capacity() * sizeof(Mark) > bytes) std::vector<Mark>().swap(ordered_);
  if (sources_.capacity() * sizeof(Range) > bytes) std::vector<Range>().swap(sources_);
}

}  // namespace svc::tok
