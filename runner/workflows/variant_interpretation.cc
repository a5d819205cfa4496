#include "runner/workflows/variant_interpretation.h"

#include "common/text.h"

#include <algorithm>
#include <cstdio>

#include "common/digest.h"
#include "runner/vcf/vcf_rewriter.h"

namespace dnaserve::runner {
namespace {

// How much of the object the pre-acceptance check reads: enough for any ordinary VCF header.
constexpr int64_t kHeaderSniffBytes = 64 * 1024;
// Progress bar shares: download, annotation, upload.
constexpr double kDownloadShare = 10.0;
constexpr double kUploadStart = 95.0;

Status NotConfigured() {
  return Unavailable(
      "the genomic-variant-interpretation workflow is not available on this deployment: no "
      "object store is configured");
}

Status Cancelled() { return Unavailable("the job was cancelled"); }

// Defence in depth: the gateway checked the same grants before queueing; this runs before every
// store request, on the grants that travelled with the job.
Status CheckGrants(const S3Access& access, const s3::S3ObjectUri& input, const s3::S3ObjectUri& output) {
  if (!S3GrantsCover(access.grants.read, input.bucket, input.key)) {
    return S3ObjectUnreadable(input.ToString());
  }
  const std::string output_prefix = S3ParentPrefix(output.ToString());
  if (!S3GrantsCover(access.grants.write, output.bucket, output.key)) {
    return S3PrefixUnwritable(output_prefix);
  }
  return Status::Ok();
}

// "12.3 MB"
std::string Megabytes(int64_t bytes) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.1f MB", static_cast<double>(bytes) / 1e6);
  return buf;
}

double Share(int64_t done, int64_t total) {
  if (total <= 0) return 0;
  return std::clamp(static_cast<double>(done) / static_cast<double>(total), 0.0, 1.0);
}

// Length-prefixed, so no two different tuples serialise alike.
void Append(std::string* out, std::string_view part) {
  *out += std::to_string(part.size());
  *out += ':';
  *out += part;
  *out += ';';
}

}  // namespace

StatusOr<VariantCase> AdmitVariantCase(core::ValidatedVariant request, const VariantResources& resources,
                                       const std::string& job_id, S3Access access) {
  VariantCase c;
  auto input = s3::ParseVcfObjectUri(request.uri);
  if (!input.ok()) return input.status();
  c.input = std::move(input).value();
  auto output = s3::AnnotatedOutputUri(c.input, job_id);
  if (!output.ok()) return output.status();
  c.output = std::move(output).value();
  if (Status granted = CheckGrants(access, c.input, c.output); !granted.ok()) return granted;
  c.access = std::move(access);

  const GenomeAssets* genome = resources.Genome(request.genome_build);
  if (genome == nullptr) {
    return BadRequest("no start-site catalogue is configured for genome_build " +
                      request.genome_build + " on this deployment");
  }
  if (request.genes) {
    auto panel = variant::ResolveGenePanel(genome->catalogue, *request.genes);
    if (!panel.ok()) return panel.status();
    c.panel = std::move(panel).value();
  }

  const s3::S3Client* store = resources.StoreFor(c.access.client_id);
  if (store == nullptr) return NotConfigured();
  auto dir = TempDir::Create(resources.work_dir(), "dnaserve-vcf-header");
  if (!dir.ok()) return dir.status();
  const std::string sniff = dir->path() + "/head";
  auto object = store->HeadObject(c.input);
  if (!object.ok() && object.status().code() != ErrorCode::kBadRequest) return object.status();
  if (!object.ok()) {
    // A refused HEAD has no error body, so it cannot tell the store refusing the service's own
    // credentials (500) from a caller's object the service may not read (400); a GET's XML
    // error can. Ask once more with one byte, and answer with whichever is more precise.
    s3::S3GetOptions probe;
    probe.prefix_bytes = 1;
    auto diagnosis = store->GetObject(c.input, sniff, probe);
    return diagnosis.ok() ? object.status() : diagnosis.status();
  }
  if (object->size == 0) return BadRequest("the input VCF " + c.input.ToString() + " is empty");
  const int64_t limit = resources.max_object_bytes();
  if (object->size > limit) {
    return BadRequest("the input VCF " + c.input.ToString() + " is " + GroupedThousands(object->size) +
                      " bytes; at most " + GroupedThousands(limit) + " bytes (2 GiB) are accepted");
  }
  c.object = *object;

  // The first bytes of exactly that version (If-Match).
  s3::S3GetOptions get;
  get.if_match = c.object.etag;
  get.prefix_bytes = kHeaderSniffBytes;
  get.max_bytes = std::max(limit, kHeaderSniffBytes);  // bounds a store that ignored Range
  auto fetched = store->GetObject(c.input, sniff, get);
  if (!fetched.ok()) return fetched.status();

  // The header: is it a VCF, is it already annotated?
  auto scan = variant::ScanVcfHeader(sniff);
  if (!scan.ok()) return scan.status();
  if (scan->has_gex_fields) {
    return BadRequest("the input VCF " + c.input.ToString() +
                      " already carries GEX_* fields: it has been annotated before; submit the "
                      "original VCF");
  }
  c.request = std::move(request);
  return c;
}

std::string VariantCaseIdentity(const std::string& client_id, const VariantCase& c) {
  std::string key;
  Append(&key, "genomic-variant-interpretation/1");
  Append(&key, client_id);
  Append(&key, c.request.uri);
  Append(&key, c.object.etag);
  Append(&key, c.request.client_ref ? "ref=" + *c.request.client_ref : "noref");
  Append(&key, c.request.genome_build);
  Append(&key, std::to_string(c.request.window));
  Append(&key, std::to_string(c.request.tissues.size()));
  for (const auto& tissue : c.request.tissues) Append(&key, tissue);
  if (c.panel) {
    Append(&key, "panel=" + std::to_string(c.panel->gene_ids.size()));
    for (const auto& id : c.panel->gene_ids) Append(&key, id);
  } else {
    Append(&key, "all-genes");
  }
  return HexDigest(DigestAlgorithm::kSha256, key);
}

StatusOr<VariantRunResult> RunVariantInterpretation(const VariantCase& c,
                                                    const VariantResources& resources,
                                                    variant::ExpressionScorer& scorer,
                                                    const core::JobContext& context) {
  const s3::S3Client* store = resources.StoreFor(c.access.client_id);
  const GenomeAssets* genome = resources.Genome(c.request.genome_build);
  if (store == nullptr) return NotConfigured();
  if (genome == nullptr) return Internal("the job's genome build has no catalogue loaded");
  if (context.Cancelled()) return Cancelled();
  if (Status granted = CheckGrants(c.access, c.input, c.output); !granted.ok()) return granted;

  auto dir = TempDir::Create(resources.work_dir(), "dnaserve-variant");
  if (!dir.ok()) return dir.status();
  const std::string input_path = dir->path() + "/input.vcf";
  const std::string output_path = dir->path() + "/output.vcf.gz";

  // 1. The accepted version of the input, whole.
  context.Progress(0, "downloading the VCF");
  s3::S3GetOptions get;
  get.if_match = c.object.etag;
  get.max_bytes = resources.max_object_bytes();
  get.control.cancelled = context.call.cancelled;
  get.control.on_progress = [&](int64_t done, int64_t total) {
    if (total <= 0) total = c.object.size;
    context.Progress(kDownloadShare * Share(done, total),
                     "downloading the VCF: " + Megabytes(done) + " of " + Megabytes(total));
  };
  auto downloaded = store->GetObject(c.input, input_path, get);
  if (!downloaded.ok()) return downloaded.status();
  if (context.Cancelled()) return Cancelled();

  // 2. Check every record, then score and write them all.
  variant::AnnotateRequest annotate;
  annotate.input_path = input_path;
  annotate.output_path = output_path;
  annotate.catalogue = &genome->catalogue;
  annotate.reference = genome->reference.get();
  annotate.scorer = &scorer;
  annotate.options.window = c.request.window;
  annotate.options.tissues = c.request.tissues;
  annotate.options.panel = c.panel;
  annotate.vcf_limits = resources.vcf_limits();
  annotate.cancelled = context.call.cancelled;
  annotate.on_progress = [&](const variant::AnnotationProgress& p) {
    const double percent = kDownloadShare + (kUploadStart - kDownloadShare) * p.percent / 100.0;
    if (p.phase == variant::AnnotationProgress::Phase::kChecking) {
      context.Progress(percent, "checking the VCF");
    } else {
      context.Progress(percent, "scoring " + GroupedThousands(p.records_done) + " of " +
                                    GroupedThousands(p.records_total) + " records");
    }
  };
  auto annotated = variant::AnnotateVcf(annotate);
  if (!annotated.ok()) return annotated.status();
  if (context.Cancelled()) return Cancelled();

  // 3. One upload of the finished, verified file.
  context.Progress(kUploadStart, "uploading the annotated VCF");
  if (Status granted = CheckGrants(c.access, c.input, c.output); !granted.ok()) return granted;
  s3::S3PutOptions put;
  put.content_type = "application/gzip";
  put.control.cancelled = context.call.cancelled;
  put.control.on_progress = [&](int64_t done, int64_t total) {
    context.Progress(kUploadStart + (100.0 - kUploadStart) * Share(done, total),
                     "uploading the annotated VCF: " + Megabytes(done) + " of " + Megabytes(total));
  };
  auto uploaded = store->PutObject(c.output, output_path, put);
  if (!uploaded.ok()) return uploaded.status();

  VariantRunResult result;
  result.annotation = std::move(annotated).value();
  result.output = c.output;
  result.output_bytes = uploaded->size;
  return result;
}

}  // namespace dnaserve::runner
