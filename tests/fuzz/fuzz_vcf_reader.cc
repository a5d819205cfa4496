// The VCF reader of the variant workflow (runner/vcf/vcf_rewriter.h) on arbitrary files:
// plain text, gzip or bgzip, whatever the bytes are. The header scan and Open() must refuse what
// is not a VCF with a message; Check() must pass every record of a file it accepts, in order
// and numbered from 1, or refuse with a message; and an accepted file must rewrite completely
// (Begin/Next/Write/Finish), record for record.
//
// The input lives in a memfd (opened by path through /proc/self/fd), the rewritten copy in a
// private directory under /dev/shm; nothing touches the disk.
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "runner/vcf/vcf_rewriter.h"

using namespace dnaserve;
using namespace dnaserve::variant;

namespace {

int g_input_fd = -1;
std::string g_input_path;
std::string g_output_path;

[[noreturn]] void Violation(const std::string& what) {
  std::fprintf(stderr, "VCF reader invariant broken: %s\n", what.c_str());
  std::abort();
}

void Refusal(const Status& status) {
  if (status.ok()) Violation("refusal with an ok status");
  if (status.message().empty()) Violation("refusal without a message");
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int* /*argc*/, char*** /*argv*/) {
  g_input_fd = memfd_create("fuzz-vcf", 0);
  if (g_input_fd < 0) std::abort();
  g_input_path = "/proc/self/fd/" + std::to_string(g_input_fd);
  char dir[] = "/dev/shm/dnaserve-fuzz-vcf-XXXXXX";
  if (!mkdtemp(dir)) std::abort();
  g_output_path = std::string(dir) + "/out.vcf.gz";
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (ftruncate(g_input_fd, 0) != 0) std::abort();
  if (size > 0 && pwrite(g_input_fd, data, size, 0) != static_cast<ssize_t>(size)) std::abort();

  auto scan = ScanVcfHeader(g_input_path);
  if (!scan.ok()) Refusal(scan.status());

  auto opened = VcfRewriter::Open(g_input_path);
  if (!opened.ok()) {
    Refusal(opened.status());
    return 0;
  }
  VcfRewriter& vcf = **opened;
  vcf.HeaderHasGexFields();
  int64_t seen = 0;
  Status checked = vcf.Check([&](const VariantRecord& record) {
    if (record.number != ++seen) Violation("records not numbered 1, 2, 3...");
    if (record.pos < 0) Violation("negative position");
    return Status::Ok();
  });
  if (!checked.ok()) {
    Refusal(checked);
    return 0;
  }
  if (vcf.record_count() != seen) Violation("record_count differs from the records visited");

  // Accepted: the rewrite must carry every record through.
  Status begun = vcf.Begin(g_output_path, {"##GEXFuzz=\"fuzz\""});
  if (!begun.ok()) {
    Refusal(begun);
    return 0;
  }
  VariantRecord record;
  int64_t written = 0;
  for (;;) {
    auto next = vcf.Next(&record);
    if (!next.ok()) {
      Refusal(next.status());
      return 0;
    }
    if (!*next) break;
    RecordAnnotation annotation;
    if (written % 2 == 0) annotation.not_run_reason = "fuzz";
    Status wrote = vcf.Write(annotation);
    if (!wrote.ok()) {
      Refusal(wrote);
      return 0;
    }
    ++written;
  }
  if (written != seen) Violation("the second pass saw a different number of records");
  Status finished = vcf.Finish();
  if (!finished.ok()) Refusal(finished);
  unlink(g_output_path.c_str());
  return 0;
}
