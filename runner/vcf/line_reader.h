// Lines of a plain, gzip or bgzip text file, read within two bounds: the length of one line and
// the decompressed bytes of the whole file. htslib's own line readers (hts_getline,
// bgzf_getline) grow their buffer until a newline comes, so a small gzip that inflates to one
// line of gigabytes would take gigabytes of memory; this reader inflates the file itself (zlib,
// which reads bgzip as the multi-member gzip it is, and plain text as is) and stops at the
// first byte past either bound. Memory: one 128 KiB read buffer, zlib's, and the current line.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

namespace dnaserve::variant {

class LineReader {
 public:
  enum class Result {
    kLine,         // `line` holds the next line (without '\n' and one trailing '\r')
    kEnd,          // the file ended cleanly (a last line without '\n' was returned before)
    kLineTooLong,  // the next line is longer than max_line_bytes
    kTooMuchText,  // the file decompresses to more than max_text_bytes
    kTruncated,    // a gzip stream ends mid-way
    kCorrupt,      // a gzip stream that does not decompress, or a read error
  };

  // nullptr when the file cannot be opened. Bounds <= 0 mean none.
  static std::unique_ptr<LineReader> Open(const std::string& path, int64_t max_line_bytes,
                                          int64_t max_text_bytes);
  ~LineReader();
  LineReader(const LineReader&) = delete;
  LineReader& operator=(const LineReader&) = delete;

  // The next line; valid until the next call. After anything but kLine, every call returns the
  // same result again.
  Result Next(std::string_view* line);

  // Bytes of the file (compressed, as stored) consumed so far: for progress.
  int64_t file_offset() const;
  // Decompressed bytes handed out so far, newlines included.
  int64_t text_bytes() const { return text_bytes_; }
  // zlib's description of the last error, for kCorrupt.
  const std::string& error() const { return error_; }

 private:
  LineReader() = default;
  bool Fill();  // reads more text into buf_; false at the end or on an error (sets done_)

  void* file_ = nullptr;  // gzFile
  int64_t max_line_bytes_ = 0;
  int64_t max_text_bytes_ = 0;
  std::string buf_;     // text read and not yet handed out: [pos_, end_)
  size_t pos_ = 0, end_ = 0;
  std::string line_;    // a line that spans reads
  int64_t text_bytes_ = 0;
  bool eof_ = false;
  Result done_ = Result::kLine;  // anything else: sticky
  std::string error_;
};

}  // namespace dnaserve::variant
