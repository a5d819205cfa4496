#include "runner/vcf/vcf_rewriter.h"

#include "common/text.h"

#include <htslib/bgzf.h>
#include <htslib/hfile.h>
#include <htslib/hts.h>
#include <htslib/hts_log.h>
#include <htslib/kstring.h>
#include <htslib/vcf.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "runner/vcf/gex_header.h"
#include "runner/vcf/line_reader.h"

namespace dnaserve::variant {
namespace {

struct HtsCloser {
  void operator()(htsFile* f) const {
    if (f) (void)hts_close(f);
  }
};
struct HeaderDeleter {
  void operator()(bcf_hdr_t* h) const { bcf_hdr_destroy(h); }
};
struct RecordDeleter {
  void operator()(bcf1_t* r) const { bcf_destroy(r); }
};
struct KstringFree {
  void operator()(kstring_t* s) const {
    free(s->s);
    delete s;
  }
};
using HtsPtr = std::unique_ptr<htsFile, HtsCloser>;
using HeaderPtr = std::unique_ptr<bcf_hdr_t, HeaderDeleter>;
using RecordPtr = std::unique_ptr<bcf1_t, RecordDeleter>;
using KstringPtr = std::unique_ptr<kstring_t, KstringFree>;

KstringPtr NewKstring() { return KstringPtr(new kstring_t{0, 0, nullptr}); }

constexpr int64_t kProgressEvery = 4096;  // records between progress callbacks

void QuietHtslib() { hts_set_log_level(HTS_LOG_OFF); }  // it would print outside our log format

int64_t FileSize(const std::string& path) {
  struct stat st {};
  return stat(path.c_str(), &st) == 0 ? static_cast<int64_t>(st.st_size) : -1;
}

// What htslib lets through but the VCF specification does not: fewer than 8 columns, a sample
// column count other than the header's, a POS that is not a number. (A record cut short is
// caught here too.)
std::string ShapeProblem(std::string_view line, int samples) {
  size_t columns = 1;
  size_t pos_start = 0, pos_end = 0;
  for (size_t i = 0; i < line.size(); ++i) {
    if (line[i] != '\t') continue;
    ++columns;
    if (columns == 2) pos_start = i + 1;
    if (columns == 3) pos_end = i;
  }
  if (columns < 8) {
    return "it has " + std::to_string(columns) + " tab-separated columns (at least 8 needed)";
  }
  const size_t expected = samples > 0 ? 9 + static_cast<size_t>(samples) : columns;
  if (samples > 0 && columns != expected) {
    return "it has " + std::to_string(columns) + " columns where the header's " +
           std::to_string(samples) + " samples need " + std::to_string(expected);
  }
  if (samples == 0 && columns > 8 && columns != 9) {
    // FORMAT without samples (9) is tolerated; sample values with no sample names are not.
    return "it has sample columns but the header names no samples";
  }
  std::string_view pos = line.substr(pos_start, pos_end - pos_start);
  if (pos.empty() || pos.find_first_not_of("0123456789") != std::string_view::npos) {
    return "POS is not a whole number";
  }
  return "";
}

std::string ParseProblem(int errcode) {
  std::string out;
  auto add = [&](int bit, const char* text) {
    if (errcode & bit) out += (out.empty() ? "" : "; ") + std::string(text);
  };
  add(BCF_ERR_NCOLS, "wrong number of tab-separated columns");
  add(BCF_ERR_LIMITS, "a value beyond htslib's limits (position, allele count or length)");
  add(BCF_ERR_CHAR, "an invalid character");
  add(BCF_ERR_CTG_INVALID, "an invalid contig name");
  add(BCF_ERR_TAG_INVALID, "an invalid INFO or FORMAT field");
  return out.empty() ? "malformed record" : out;
}

bool IsGexId(const char* id) { return id && std::strncmp(id, "GEX", 3) == 0; }

// Any INFO/FORMAT/FILTER id starting GEX, or any ##GEX... line.
bool HeaderHasGex(const bcf_hdr_t* hdr) {
  for (int i = 0; i < hdr->nhrec; ++i) {
    const bcf_hrec_t* hrec = hdr->hrec[i];
    if (hrec->key && std::strncmp(hrec->key, "GEX", 3) == 0) return true;
    for (int k = 0; k < hrec->nkeys; ++k) {
      if (std::strcmp(hrec->keys[k], "ID") == 0 && IsGexId(hrec->vals[k])) return true;
    }
  }
  return false;
}

// ALT alleles in a record line's fifth column, counted before htslib parses it (htslib refuses
// more than 65,535 with a message that names no bound). 0 when the column is missing or '.'.
int64_t AltCount(std::string_view line) {
  size_t start = 0;
  for (int column = 0; column < 4; ++column) {
    start = line.find('\t', start);
    if (start == std::string_view::npos) return 0;
    ++start;
  }
  size_t end = line.find('\t', start);
  std::string_view alt = line.substr(start, end == std::string_view::npos ? end : end - start);
  if (alt.empty() || alt == ".") return 0;
  int64_t commas = 0;
  for (char c : alt) commas += c == ',';
  return commas + 1;
}

std::string Join(const std::vector<std::string>& items) {
  std::string out;
  for (const auto& item : items) out += (out.empty() ? "" : ",") + item;
  return out;
}

}  // namespace

struct VcfRewriter::Impl {
  std::string input_path;
  int64_t input_size = 0;
  VcfLimits limits;
  HtsPtr in;  // only to recognise the format; the text is read through `text`
  std::unique_ptr<LineReader> text;
  HeaderPtr hdr;  // the input's header; pass 1 adds what records used undeclared
  RecordPtr rec{bcf_init()};
  KstringPtr line = NewKstring();
  bool checked = false;
  int64_t records = 0;
  int64_t number = 0;         // of the record last read in the current pass
  std::string last_position;  // "contig:pos" of the last good record, for messages

  std::string output_path;
  std::string temp_path;
  HtsPtr out;
  HeaderPtr out_hdr;
  bool have_record = false;
  bool input_done = false;
  int64_t written = 0;
  bool finished = false;

  ~Impl() {
    out.reset();
    if (!finished && !temp_path.empty()) std::remove(temp_path.c_str());
  }

  Status OpenInput() {
    in.reset(hts_open(input_path.c_str(), "r"));
    if (!in) return BadRequest("the input VCF cannot be opened");
    const htsFormat* format = hts_get_format(in.get());
    if (format->format == bcf) {
      return BadRequest("the input is BCF; send VCF text (plain, gzip or bgzip)");
    }
    if (format->format != vcf) {
      return BadRequest("the input is not a VCF: its first line must be ##fileformat=VCFv4.x");
    }
    if (format->compression != no_compression && format->compression != gzip &&
        format->compression != bgzf) {
      return BadRequest("the input VCF's compression is not supported (use plain, gzip or bgzip)");
    }
    if (format->compression == bgzf) {
      if (bgzf_check_EOF(in->fp.bgzf) == 0) {
        return BadRequest("the input VCF is truncated: its bgzip end-of-file marker is missing");
      }
    }
    in.reset();
    // htslib's readers grow a line until its newline, however far away: read the text here,
    // within the bounds, and hand htslib one line at a time.
    text = LineReader::Open(input_path, limits.max_line_bytes, limits.max_decompressed_bytes);
    if (!text) return BadRequest("the input VCF cannot be opened");
    return Status::Ok();
  }

  int64_t BytesRead() const { return text ? text->file_offset() : 0; }

  // What went wrong reading the line after record `number` (or in the header), as the client's
  // error: the bound or the damage, where, and what to do.
  Status LineFailure(LineReader::Result result, bool in_header) const {
    const std::string where =
        in_header ? std::string("in its header")
                  : "at record " + std::to_string(number + 1) + Where();
    switch (result) {
      case LineReader::Result::kLineTooLong:
        return BadRequest(
            "the input VCF has a line longer than " + GroupedThousands(limits.max_line_bytes) +
            " bytes (this service's limit per line) " + where +
            "; the workflow does not read sample columns: drop them (bcftools view -G) and "
            "resubmit, or check that the file is not damaged");
      case LineReader::Result::kTooMuchText:
        return BadRequest("the input VCF decompresses to more than " +
                          GroupedThousands(limits.max_decompressed_bytes) +
                          " bytes (this service's limit per job), exceeded " + where +
                          "; drop sample columns (bcftools view -G) or split the file by "
                          "chromosome (bcftools view -r) and submit the parts");
      case LineReader::Result::kTruncated:
        return BadRequest("the input VCF is truncated: its gzip stream ends " + where);
      case LineReader::Result::kCorrupt:
        return BadRequest("the input VCF is corrupt: decompressing it failed " + where + " (" +
                          text->error() + ")");
      default:
        return Internal("unexpected line reader result");
    }
  }

  // The header's lines up to and including #CHROM, as htslib's bcf_hdr_read gathers them.
  StatusOr<std::string> ReadHeaderText() {
    std::string header;
    std::string_view text_line;
    while (true) {
      const LineReader::Result result = text->Next(&text_line);
      if (result == LineReader::Result::kEnd) break;
      if (result != LineReader::Result::kLine) return LineFailure(result, /*in_header=*/true);
      if (text_line.empty()) continue;
      if (text_line[0] != '#') {
        return BadRequest(
            "the input VCF's header is malformed or incomplete (it must end with the "
            "#CHROM line)");
      }
      if (static_cast<int64_t>(header.size() + text_line.size() + 1) > limits.max_header_bytes) {
        return BadRequest("the input VCF's header is longer than " +
                          GroupedThousands(limits.max_header_bytes) +
                          " bytes (this service's limit); remove header lines the file does not "
                          "need (bcftools annotate -x, bcftools view -G) and resubmit");
      }
      header.append(text_line);
      header.push_back('\n');
      if (text_line.size() < 2 || text_line[1] != '#') return header;  // the #CHROM line
    }
    return BadRequest(
        "the input VCF's header is malformed or incomplete (it must end with the #CHROM line)");
  }

  // Reads and parses the next record into `rec`; false at the end of the file.
  StatusOr<bool> ReadRecord() {
    std::string_view text_line;
    const LineReader::Result result = text->Next(&text_line);
    if (result == LineReader::Result::kEnd) return false;
    if (result != LineReader::Result::kLine) return LineFailure(result, /*in_header=*/false);
    if (number >= limits.max_records) {
      return BadRequest("the input VCF has more than " + GroupedThousands(limits.max_records) +
                        " records (this service's limit per job); split it, e.g. by chromosome "
                        "with bcftools view -r, and submit the parts");
    }
    ++number;
    if (text_line.empty()) {
      return BadRequest("input VCF record " + std::to_string(number) + Where() +
                        " is an empty line");
    }
    line->l = 0;
    if (kputsn(text_line.data(), text_line.size(), line.get()) < 0) {
      return Internal("out of memory reading the input VCF");
    }
    std::string shape = ShapeProblem(std::string_view(line->s, line->l), bcf_hdr_nsamples(hdr));
    if (!shape.empty()) {
      return BadRequest("input VCF record " + std::to_string(number) + Where() +
                        " cannot be parsed: " + shape);
    }
    // Refused here, not left to the engine: every ALT costs a model call per start site and
    // tissue, and a partial answer for the record would be silently incomplete.
    if (const int64_t alts = AltCount(text_line); alts > limits.max_alts_per_record) {
      const std::string_view contig = text_line.substr(0, text_line.find('\t'));
      const size_t pos_start = contig.size() + 1;
      const std::string_view pos =
          text_line.substr(pos_start, text_line.find('\t', pos_start) - pos_start);
      return BadRequest("input VCF record " + std::to_string(number) + " (" +
                        std::string(contig) + ":" + std::string(pos) + ") has " + GroupedThousands(alts) +
                        " ALT alleles; at most " + GroupedThousands(limits.max_alts_per_record) +
                        " per record are accepted (this service's limit): split multi-allelic "
                        "records (bcftools norm -m -any) and resubmit");
    }
    if (vcf_parse(line.get(), hdr.get(), rec.get()) != 0 ||
        (rec->errcode & ~(BCF_ERR_CTG_UNDEF | BCF_ERR_TAG_UNDEF)) != 0) {
      return BadRequest("input VCF record " + std::to_string(number) + Where() +
                        " cannot be parsed: " + ParseProblem(rec->errcode));
    }
    if (bcf_unpack(rec.get(), BCF_UN_STR) != 0) {
      return BadRequest("input VCF record " + std::to_string(number) + Where() +
                        " cannot be parsed: bad REF or ALT");
    }
    return true;
  }

  std::string Where() const {
    return last_position.empty() ? "" : " (after " + last_position + ")";
  }

  void Fill(VariantRecord* out_record) {
    out_record->number = number;
    out_record->contig = bcf_hdr_id2name(hdr.get(), rec->rid);
    out_record->pos = rec->pos + 1;
    out_record->ref = rec->n_allele > 0 ? rec->d.allele[0] : "";
    out_record->alts.clear();
    for (int i = 1; i < rec->n_allele; ++i) out_record->alts.emplace_back(rec->d.allele[i]);
    last_position = out_record->contig + ":" + std::to_string(out_record->pos);
  }
};

VcfRewriter::VcfRewriter(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
VcfRewriter::~VcfRewriter() = default;

StatusOr<std::unique_ptr<VcfRewriter>> VcfRewriter::Open(const std::string& input_path,
                                                        const VcfLimits& limits) {
  QuietHtslib();
  auto impl = std::make_unique<Impl>();
  impl->input_path = input_path;
  impl->limits = limits;
  impl->input_size = FileSize(input_path);
  if (impl->input_size < 0) return BadRequest("the input VCF cannot be read");
  if (impl->input_size == 0) return BadRequest("the input VCF is empty");
  if (!impl->rec) return Internal("out of memory");
  DNASERVE_RETURN_IF_ERROR(impl->OpenInput());
  auto header = impl->ReadHeaderText();
  if (!header.ok()) return header.status();
  impl->hdr.reset(bcf_hdr_init("r"));
  if (!impl->hdr) return Internal("out of memory");
  if (bcf_hdr_parse(impl->hdr.get(), header->data()) != 0) {
    return BadRequest(
        "the input VCF's header is malformed or incomplete (it must end with the "
        "#CHROM line)");
  }
  return std::unique_ptr<VcfRewriter>(new VcfRewriter(std::move(impl)));
}

bool VcfRewriter::HeaderHasGexFields() const { return HeaderHasGex(impl_->hdr.get()); }

int64_t VcfRewriter::record_count() const { return impl_->records; }

Status VcfRewriter::Check(const std::function<Status(const VariantRecord&)>& visit,
                          const ByteProgress& progress) {
  Impl& m = *impl_;
  if (m.checked) return Internal("VcfRewriter::Check called twice");
  if (HeaderHasGex(m.hdr.get())) {
    return BadRequest("the input VCF already carries GEX_* fields (it was annotated before)");
  }
  VariantRecord record;
  while (true) {
    auto more = m.ReadRecord();
    if (!more.ok()) return more.status();
    if (!*more) break;
    m.Fill(&record);
    if (visit) DNASERVE_RETURN_IF_ERROR(visit(record));
    if (progress && m.number % kProgressEvery == 0) progress(m.BytesRead(), m.input_size);
  }
  // Fields used without a declaration were added to the header while parsing.
  if (HeaderHasGex(m.hdr.get())) {
    return BadRequest("the input VCF already carries GEX_* fields (it was annotated before)");
  }
  if (progress) progress(m.input_size, m.input_size);
  m.records = m.number;
  m.checked = true;
  return Status::Ok();
}

Status VcfRewriter::Begin(const std::string& output_path,
                          const std::vector<std::string>& extra_header_lines) {
  Impl& m = *impl_;
  if (!m.checked) return Internal("VcfRewriter::Begin before Check");
  m.out_hdr.reset(bcf_hdr_dup(m.hdr.get()));
  if (!m.out_hdr) return Internal("could not copy the VCF header");
  for (const auto& line : extra_header_lines) {
    if (bcf_hdr_append(m.out_hdr.get(), line.c_str()) != 0) {
      return Internal("htslib refused the header line " + line.substr(0, line.find('=')));
    }
  }
  if (bcf_hdr_sync(m.out_hdr.get()) != 0) return Internal("could not complete the VCF header");

  m.output_path = output_path;
  std::string templ = output_path + ".partial-XXXXXX";
  int fd = mkstemp(templ.data());
  if (fd < 0) return Internal("cannot create a temporary file beside " + output_path);
  close(fd);
  m.temp_path = templ;
  m.out.reset(hts_open(m.temp_path.c_str(), "wz"));
  if (!m.out) return Internal("cannot open " + m.temp_path + " for writing");
  if (bcf_hdr_write(m.out.get(), m.out_hdr.get()) != 0) {
    return Internal("writing the annotated VCF's header failed (disk full?)");
  }

  // Second pass: the records again, parsed with the header pass 1 completed.
  DNASERVE_RETURN_IF_ERROR(m.OpenInput());
  auto again = m.ReadHeaderText();
  if (!again.ok()) return again.status();
  m.number = 0;
  m.last_position.clear();
  m.have_record = false;
  m.input_done = false;
  return Status::Ok();
}

StatusOr<bool> VcfRewriter::Next(VariantRecord* record) {
  Impl& m = *impl_;
  if (!m.out) return Internal("VcfRewriter::Next before Begin");
  if (m.have_record) return Internal("VcfRewriter::Next without Write of the previous record");
  auto more = m.ReadRecord();
  if (!more.ok()) return more.status();
  if (!*more) {
    m.input_done = true;
    return false;
  }
  m.Fill(record);
  m.have_record = true;
  return true;
}

Status VcfRewriter::Write(const RecordAnnotation& annotation) {
  Impl& m = *impl_;
  if (!m.have_record) return Internal("VcfRewriter::Write without a record");
  m.have_record = false;
  bcf_hdr_t* out_hdr = m.out_hdr.get();
  bcf1_t* rec = m.rec.get();
  if (bcf_translate(out_hdr, m.hdr.get(), rec) != 0) {
    return Internal("could not carry record " + std::to_string(m.number) + " to the output header");
  }
  auto fail = [&](const char* what) {
    return Internal(std::string("could not add ") + what + " to record " +
                    std::to_string(m.number));
  };
  if (!annotation.gex_ann.empty() &&
      bcf_update_info_string(out_hdr, rec, kGexAnn, Join(annotation.gex_ann).c_str()) != 0) {
    return fail(kGexAnn);
  }
  if (!annotation.not_run_reason.empty()) {
    if (bcf_update_info_flag(out_hdr, rec, kGexNotRun, nullptr, 1) != 0) return fail(kGexNotRun);
    if (bcf_update_info_string(out_hdr, rec, kGexNotRunReason, annotation.not_run_reason.c_str()) !=
        0) {
      return fail(kGexNotRunReason);
    }
  }
  if (!annotation.skipped_alts.empty()) {
    std::vector<std::string> escaped;
    for (const auto& alt : annotation.skipped_alts) escaped.push_back(InfoValueEscape(alt));
    if (bcf_update_info_string(out_hdr, rec, kGexSkippedAlt, Join(escaped).c_str()) != 0) {
      return fail(kGexSkippedAlt);
    }
  }
  if (bcf_write(m.out.get(), out_hdr, rec) != 0) {
    return Internal("writing the annotated VCF failed at record " + std::to_string(m.number) +
                    " (disk full?)");
  }
  ++m.written;
  return Status::Ok();
}

Status VcfRewriter::Finish() {
  Impl& m = *impl_;
  if (!m.out) return Internal("VcfRewriter::Finish before Begin");
  if (!m.input_done || m.written != m.records) {
    return Internal("the annotated VCF is incomplete: " + std::to_string(m.written) + " of " +
                    std::to_string(m.records) + " records written");
  }
  if (hts_close(m.out.release()) != 0) {
    return Internal("closing the annotated VCF failed (disk full?)");
  }
  // Read it back: a bgzip VCF holding every record, or it is not handed on.
  HtsPtr check(hts_open(m.temp_path.c_str(), "r"));
  if (!check || hts_get_format(check.get())->format != vcf ||
      hts_get_format(check.get())->compression != bgzf) {
    return Internal("the annotated VCF could not be read back as bgzip VCF");
  }
  HeaderPtr check_hdr(bcf_hdr_read(check.get()));
  RecordPtr check_rec(bcf_init());
  if (!check_hdr || !check_rec)
    return Internal("the annotated VCF's header could not be read back");
  int64_t count = 0;
  int ret = 0;
  while ((ret = bcf_read(check.get(), check_hdr.get(), check_rec.get())) == 0) ++count;
  if (ret < -1 || count != m.records) {
    return Internal("the annotated VCF read back with " + std::to_string(count) + " of " +
                    std::to_string(m.records) + " records");
  }
  check.reset();
  if (std::rename(m.temp_path.c_str(), m.output_path.c_str()) != 0) {
    return Internal("could not move the annotated VCF into place");
  }
  m.finished = true;
  return Status::Ok();
}

// bgzf_getline, unbounded, is bounded here by its input: the caller's prefix of the object
// (64 KiB) inflates to at most about 64 MiB (deflate's ratio is at most 1032:1).
StatusOr<VcfHeaderScan> ScanVcfHeader(const std::string& path) {
  QuietHtslib();
  if (FileSize(path) == 0) return BadRequest("the input VCF is empty");
  BGZF* fp = bgzf_open(path.c_str(), "r");  // plain, gzip and bgzip alike
  if (!fp) return BadRequest("the input VCF cannot be read");
  KstringPtr line = NewKstring();
  VcfHeaderScan scan;
  bool first = true;
  int ret = 0;
  while ((ret = bgzf_getline(fp, '\n', line.get())) >= 0) {
    std::string_view text(line->s ? line->s : "", line->l);
    if (first) {
      first = false;
      if (text.substr(0, 16) != "##fileformat=VCF") {
        (void)bgzf_close(fp);
        return BadRequest("the input is not a VCF: its first line must be ##fileformat=VCFv4.x");
      }
      continue;
    }
    if (text.substr(0, 6) == "#CHROM") {
      scan.complete = true;
      break;
    }
    if (text.substr(0, 5) == "##GEX" || text.find("<ID=GEX") != std::string_view::npos) {
      scan.has_gex_fields = true;
    }
    if (text.empty() || text[0] != '#') break;  // a record before #CHROM: not a valid header
  }
  (void)bgzf_close(fp);  // a cut-off compressed prefix ends in an error: that is expected here
  if (first && ret < -1) {
    return BadRequest("the input VCF is corrupt or truncated: its beginning cannot be decompressed");
  }
  if (first) return BadRequest("the input is not a VCF: it has no readable first line");
  return scan;
}

}  // namespace dnaserve::variant
