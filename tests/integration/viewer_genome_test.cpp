// The /viewer page's locus and variant boxes (issue 25, scopes 2 and 7) in headless chromium
// against a real stack: a gateway and a runner of the integration service (same redis-server, a
// database of their own) whose runner holds the GRCh37 chr20 reference (scripts/build-catalogue,
// Debian vt-examples), with the bundled splice-human package as the splice worker (the variant
// scorer needs a per-base model with a flank; the service's are tiny models). The page is driven
// by tests/viewer/viewer_genome_test.js: a region drawn at its genome coordinates, malformed and
// impossible regions explained, variants scored with REF vs ALT tracks, a REF mismatch and an
// unmatched expression context said in plain words. Skips with a message when the Debian
// packages cannot be had.
#include <catch2/catch.hpp>

#include <cstdlib>
#include <filesystem>
#include <sstream>

#include "runner/genome/reference_genome.h"
#include "tests/integration/service_fixture.h"
#include "tests/support/variant_data.h"

using namespace dnaserve::testing;

namespace {

namespace fs = std::filesystem;

struct GenomeViewerService {
  Service* svc = nullptr;
  std::unique_ptr<dnaserve::variant::ReferenceGenome> reference;
  std::string dir;
  LaunchedWorker splice;
  LaunchedGateway gateway;
  ChildProcess runner;

  std::string Base(int64_t pos1) const {
    auto bases = reference->Fetch("20", pos1 - 1, pos1);
    REQUIRE(bases.ok());
    return *bases;
  }
};

GenomeViewerService* GetGenomeViewerService(std::string* skip) {
  static std::string reason;
  static GenomeViewerService* instance = []() -> GenomeViewerService* {
    std::string failure;
    Service* svc = Service::Get(&failure);
    if (svc == nullptr) {
      reason = "the integration service did not start: " + failure;
      return nullptr;
    }
    auto built = BuildCatalogue({}, &reason);
    if (!built) return nullptr;
    auto s = std::make_unique<GenomeViewerService>();
    s->svc = svc;
    auto reference = dnaserve::variant::ReferenceGenome::Open(built->fasta);
    if (!reference.ok()) {
      reason = reference.status().message();
      return nullptr;
    }
    s->reference = std::move(reference).value();
    s->dir = MakeTempDir("dnaserve-viewer-genome");
    if (!StartBundledSpliceWorker(s->dir, &s->splice, &reason)) return nullptr;
    const std::string workers = WorkersWithSplice(*svc, s->splice.address());
    // Database 6: the integration service's runner holds no reference.
    if (!StartReferenceStack(*svc, 6, workers, *built, "splice", s->dir, &s->runner, &s->gateway,
                             &reason)) {
      return nullptr;
    }
    // Its gateway, runner and splice worker stopped at exit, before the integration service's.
    std::atexit([] { delete instance; });
    return s.release();
  }();
  *skip = reason;
  return instance;
}

char OtherBase(char b) { return b == 'C' ? 'T' : 'C'; }

TEST_CASE("viewer: the locus box draws tasks asked by interval at genome coordinates and the "
          "variant box draws REF vs ALT, with errors in plain words, at 1400x900",
          "[clients][viewer]") {
  std::string skip;
  GenomeViewerService* s = GetGenomeViewerService(&skip);
  if (s == nullptr) {
    WARN("skipped: " << skip);
    return;
  }
  const std::string runner = SourceDir() + "/tests/viewer/viewer_genome_test.js";
  if (!fs::exists(SourceDir() + "/tests/viewer/node_modules/puppeteer-core") ||
      !fs::exists("/usr/bin/chromium")) {
    FAIL("puppeteer-core (npm ci --prefix tests/viewer) or Debian's chromium is missing: "
         "run scripts/install-deps");
  }
  // An SNV the reference agrees with (the API document's example: a donor gain for
  // splice-human) and one whose REF is not the reference's base.
  const int64_t scored = 68391;
  const int64_t mismatched = 5753600;
  const std::string ref = s->Base(scored);
  const std::string wrong(1, OtherBase(s->Base(mismatched)[0]));
  REQUIRE(wrong != s->Base(mismatched));
  const std::string good_variant =
      "chr20:" + std::to_string(scored) + ":" + ref + ":" + std::string(1, OtherBase(ref[0]));
  const std::string bad_variant = "chr20:" + std::to_string(mismatched) + ":" + wrong + ":" +
                                  (wrong == "G" ? "A" : "G");
  const std::string shots = MakeTempDir("dnaserve-viewer-genome-shots");
  std::string out;
  int rc = RunCommand({"node", runner, "--url", s->gateway.base_url(), "--key",
                       s->svc->keys().alice, "--variant", good_variant, "--mismatch", bad_variant,
                       "--screenshot-dir", shots},
                      &out);
  // Kept on request, failed run or not: a failing layout is easier to fix when seen.
  if (const char* keep = std::getenv("DNASERVE_VIEWER_SCREENSHOTS")) {
    fs::create_directories(keep);
    for (const auto& entry : fs::directory_iterator(shots)) {
      fs::copy_file(entry.path(), fs::path(keep) / entry.path().filename(),
                    fs::copy_options::overwrite_existing);
    }
  }
  INFO(out);
  REQUIRE(rc == 0);
  for (const char* name : {"viewer-locus-1400x900.png", "viewer-variants-1400x900.png"}) {
    INFO(name);
    CHECK(fs::file_size(fs::path(shots) / name) > 20000);
  }
}

}  // namespace
