#include "core/validation/variant_score_vcf.h"

#include <zlib.h>

#include <algorithm>
#include <cctype>
#include <vector>

namespace dnaserve::core {
namespace {

// Echoed in every result: a 1 MB REF must not come back whole.
constexpr size_t kMaxInputEcho = 512;
constexpr size_t kInflateChunk = 256 * 1024;

std::string Lowered(std::string_view text) {
  std::string out(text);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

std::string Trimmed(std::string_view text) {
  const size_t first = text.find_first_not_of(" \t");
  if (first == std::string_view::npos) return "";
  const size_t last = text.find_last_not_of(" \t");
  return std::string(text.substr(first, last - first + 1));
}

bool IsGzip(std::string_view body) {
  return body.size() >= 2 && static_cast<unsigned char>(body[0]) == 0x1f &&
         static_cast<unsigned char>(body[1]) == 0x8b;
}

Status TextTooLarge(int64_t max_bytes) {
  return Status(ErrorCode::kPayloadTooLarge,
                "the VCF inflates to more than " + std::to_string(max_bytes >> 20) +
                    " MiB of text, the most one job reads; drop genotype columns (bcftools view "
                    "-G) or split the file (bcftools view -r)");
}

std::vector<std::string_view> Fields(std::string_view line, size_t at_most) {
  std::vector<std::string_view> out;
  size_t from = 0;
  while (out.size() + 1 < at_most) {
    const size_t tab = line.find('\t', from);
    if (tab == std::string_view::npos) break;
    out.push_back(line.substr(from, tab - from));
    from = tab + 1;
  }
  out.push_back(line.substr(from));
  return out;
}

std::optional<int64_t> Position(std::string_view digits) {
  if (digits.empty() || digits.size() > 12) return std::nullopt;
  int64_t value = 0;
  for (char c : digits) {
    if (c < '0' || c > '9') return std::nullopt;
    value = value * 10 + (c - '0');
  }
  if (value < 1) return std::nullopt;
  return value;
}

std::string Echo(std::string text) {
  if (text.size() > kMaxInputEcho) text.resize(kMaxInputEcho);
  return text;
}

// One data line -> its variants (one per ALT), appended to `out`.
void ReadRecord(std::string_view line, int64_t line_number, const std::string& assembly,
                std::vector<RequestedVariant>* out) {
  const auto fields = Fields(line, 6);  // CHROM POS ID REF ALT, the rest unread
  if (fields.size() < 5) {
    RequestedVariant v;
    v.assembly = assembly;
    v.input = Echo(std::string(line));
    v.problem = VariantProblem{"invalid_variant", "line " + std::to_string(line_number) +
                                                      " has fewer than 5 tab-separated columns "
                                                      "(CHROM POS ID REF ALT)"};
    out->push_back(std::move(v));
    return;
  }
  const auto position = Position(fields[1]);
  std::string_view alts = fields[4];
  size_t from = 0;
  while (true) {
    const size_t comma = alts.find(',', from);
    const std::string_view alt = alts.substr(from, comma == std::string_view::npos
                                                        ? std::string_view::npos
                                                        : comma - from);
    RequestedVariant v;
    v.assembly = assembly;
    v.contig = std::string(fields[0]);
    v.position = position.value_or(0);
    v.ref = std::string(fields[3]);
    v.alt = std::string(alt);
    v.input = Echo(v.contig + ":" + std::string(fields[1]) + ":" + v.ref + ":" + v.alt);
    if (!position) {
      v.problem = VariantProblem{"invalid_variant",
                                 "line " + std::to_string(line_number) +
                                     ": POS must be an integer >= 1 (1-based)"};
    } else if (v.contig.empty()) {
      v.problem = VariantProblem{"invalid_variant",
                                 "line " + std::to_string(line_number) + ": CHROM is empty"};
    }
    CheckAlleles(&v);  // keeps a problem already found; upper-cases otherwise
    out->push_back(std::move(v));
    if (comma == std::string_view::npos) break;
    from = comma + 1;
  }
}

Status ReadScorerNames(const std::optional<std::string>& names, ValidatedVariantScore* out) {
  if (!names) {
    out->splice = true;
    return Status::Ok();
  }
  size_t from = 0;
  const std::string& text = *names;
  while (from <= text.size()) {
    size_t comma = text.find(',', from);
    if (comma == std::string::npos) comma = text.size();
    const std::string name = Trimmed(std::string_view(text).substr(from, comma - from));
    if (name == "splice") {
      out->splice = true;
    } else if (name == "chromatin") {
      out->chromatin = true;
    } else if (name == "promoter") {
      out->promoter = true;
    } else if (name == "expression") {
      return ValidationFailed({"query", "scorers"},
                              "the expression scorer needs contexts, which a VCF body cannot "
                              "carry: send the variants as JSON with scorers.expression.contexts",
                              "value_error");
    } else {
      return ValidationFailed({"query", "scorers"},
                              "unknown scorer '" + name.substr(0, 64) +
                                  "'; a VCF body is scored by splice, chromatin or promoter "
                                  "(comma-separated)",
                              "value_error");
    }
    from = comma + 1;
  }
  return Status::Ok();
}

}  // namespace

bool IsVcfContentType(std::string_view content_type) {
  std::string type = Lowered(content_type.substr(0, content_type.find(';')));
  type = Trimmed(type);
  return type == "text/x-vcf" || type == "text/vcf" || type == "application/gzip" ||
         type == "application/x-gzip";
}

StatusOr<std::string> InflateVcfBody(std::string_view body, int64_t max_bytes) {
  if (!IsGzip(body)) {
    if (static_cast<int64_t>(body.size()) > max_bytes) return TextTooLarge(max_bytes);
    return std::string(body);
  }
  std::string text;
  z_stream stream{};
  // 15 + 32: zlib or gzip by its header; one member at a time (bgzip writes many).
  if (inflateInit2(&stream, 15 + 32) != Z_OK) return Internal("zlib could not start");
  stream.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(body.data()));
  stream.avail_in = static_cast<uInt>(body.size());
  std::vector<char> chunk(kInflateChunk);
  Status failure = Status::Ok();
  while (true) {
    stream.next_out = reinterpret_cast<Bytef*>(chunk.data());
    stream.avail_out = static_cast<uInt>(chunk.size());
    const int rc = inflate(&stream, Z_NO_FLUSH);
    if (rc == Z_BUF_ERROR && stream.avail_in == 0) {
      failure = BadRequest("the gzip body ends in the middle of a stream (truncated upload?)");
      break;
    }
    if (rc != Z_OK && rc != Z_STREAM_END) {
      failure = BadRequest("the gzip body does not decompress (" +
                           std::string(stream.msg ? stream.msg : "corrupt data") +
                           "); send a bgzip or gzip VCF, or plain text");
      break;
    }
    const size_t produced = chunk.size() - stream.avail_out;
    if (static_cast<int64_t>(text.size() + produced) > max_bytes) {
      failure = TextTooLarge(max_bytes);  // stop now: a bomb is never inflated further
      break;
    }
    text.append(chunk.data(), produced);
    if (rc == Z_STREAM_END) {
      if (stream.avail_in == 0) break;
      if (inflateReset(&stream) != Z_OK) {  // the next bgzip block
        failure = Internal("zlib could not continue");
        break;
      }
    }
  }
  inflateEnd(&stream);
  if (!failure.ok()) return failure;
  return text;
}

StatusOr<ValidatedVariantScore> ValidateVariantScoreVcf(const VcfScoreCall& call) {
  if (call.body.size() >= 4 && call.body.substr(0, 3) == "BCF") {
    return BadRequest("BCF is not read here: send VCF text, bgzipped or plain (bcftools view -Oz)");
  }
  auto text = InflateVcfBody(call.body, kMaxVcfTextBytes);
  if (!text.ok()) return text.status();
  if (text->size() >= 3 && text->compare(0, 3, "BCF") == 0) {
    return BadRequest("BCF is not read here: send VCF text, bgzipped or plain (bcftools view -Oz)");
  }
  ValidatedVariantScore out;
  DNASERVE_RETURN_IF_ERROR(ReadScorerNames(call.scorers, &out));
  const std::string assembly =
      call.assembly && !call.assembly->empty() ? *call.assembly : std::string(kDefaultScoreAssembly);
  std::string_view rest(*text);
  bool saw_header = false;
  int64_t line_number = 0;
  while (!rest.empty()) {
    const size_t end = rest.find('\n');
    std::string_view line = rest.substr(0, end);
    rest = end == std::string_view::npos ? std::string_view() : rest.substr(end + 1);
    ++line_number;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.empty()) continue;
    if (line[0] == '#') {
      if (line.rfind("#CHROM", 0) == 0) saw_header = true;
      continue;
    }
    if (!saw_header) {
      return BadRequest("not a VCF: line " + std::to_string(line_number) +
                        " is a record before the #CHROM header line");
    }
    ReadRecord(line, line_number, assembly, &out.variants);
    if (static_cast<int64_t>(out.variants.size()) > kMaxBatchScoreVariants) {
      return Status(ErrorCode::kPayloadTooLarge,
                    "the VCF holds more than " + std::to_string(kMaxBatchScoreVariants) +
                        " variants (each ALT of a record counts), the most one job scores; "
                        "split it (bcftools view -r, or split -l on the records) and submit "
                        "each part");
    }
  }
  if (!saw_header) return BadRequest("not a VCF: no #CHROM header line");
  if (out.variants.empty()) return BadRequest("the VCF has no records to score");
  return out;
}

}  // namespace dnaserve::core
