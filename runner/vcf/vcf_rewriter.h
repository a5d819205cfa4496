// Reads an input VCF (plain, gzip or bgzip) and writes its annotated bgzip copy through htslib,
// which is used only in vcf_rewriter.cc and vcf_header_scan.cc.
//
// Two passes over the input. Check() parses every record before anything is scored, so
// malformed input fails fast and the record count is known; it also completes the header with
// any tag htslib met undeclared, so the output header can be written before the first record.
// Then Begin() / Next() / Write() / Finish() copy every record, in order, adding the GEX_*
// INFO fields. The output goes to a temporary file beside `output_path`, renamed into place only
// after Finish() has re-read it and found every record; on any failure (or destruction before
// Finish) the temporary file is removed. The input is never modified.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "common/status.h"
#include "runner/vcf/vcf_types.h"

namespace dnaserve::variant {

// Bytes of the (possibly compressed) input consumed so far, and the file's size.
using ByteProgress = std::function<void(int64_t bytes_read, int64_t bytes_total)>;

class VcfRewriter {
 public:
  // Opens the input and reads its header. bad_request for anything that is not a VCF, and for
  // input past `limits` (checked while reading: no line past the bound is ever held whole).
  static StatusOr<std::unique_ptr<VcfRewriter>> Open(const std::string& input_path,
                                                     const VcfLimits& limits = {});
  ~VcfRewriter();
  VcfRewriter(const VcfRewriter&) = delete;
  VcfRewriter& operator=(const VcfRewriter&) = delete;

  // True when the header declares any GEX_* field or ##GEX line (an already annotated file).
  bool HeaderHasGexFields() const;

  // Pass 1: every record, in order, to `visit` (which may stop the pass with an error). Fails
  // with bad_request naming the record for malformed input, a truncated file, or GEX_* fields
  // met in records.
  Status Check(const std::function<Status(const VariantRecord&)>& visit,
               const ByteProgress& progress = nullptr);
  int64_t record_count() const;

  // Pass 2: starts the output with the input's header plus `extra_header_lines` ("##..." each).
  Status Begin(const std::string& output_path, const std::vector<std::string>& extra_header_lines);
  // The next input record; false after the last.
  StatusOr<bool> Next(VariantRecord* record);
  // Writes the record last returned by Next with `annotation` added.
  Status Write(const RecordAnnotation& annotation);
  // Closes the output, re-reads it (bgzip VCF, record count equal to the input's) and moves it
  // to `output_path`.
  Status Finish();

 private:
  struct Impl;
  explicit VcfRewriter(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// Pre-acceptance check on the first bytes of an object: is it a VCF, and does its header already
// carry GEX_* fields? `complete` is false when the prefix ended before the #CHROM line.
struct VcfHeaderScan {
  bool complete = false;
  bool has_gex_fields = false;
};
// Reads the whole file given: meant for a prefix of the object (see the .cc).
StatusOr<VcfHeaderScan> ScanVcfHeader(const std::string& path);

}  // namespace dnaserve::variant
