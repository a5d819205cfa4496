#include "tests/integration/reference_stack.h"

#include <zlib.h>

#include <algorithm>
#include <map>
#include <set>
#include <sstream>
#include <utility>

namespace dnaserve::testing {

HttpResult PostJson(const std::string& base, const std::string& key, const std::string& path,
                    const std::string& body, std::vector<std::string> extra_headers,
                    long timeout_seconds) {
  std::vector<std::string> headers = {"Authorization: Bearer " + key,
                                      "Content-Type: application/json"};
  for (auto& h : extra_headers) headers.push_back(std::move(h));
  return GatewayRequest("POST", base, path, headers, body, timeout_seconds);
}

std::string FirstErrorLocation(const rapidjson::Value& envelope) {
  const auto& errors = envelope["error"]["details"]["errors"];
  REQUIRE(errors.Size() >= 1);
  std::string loc;
  for (const auto& part : errors[0]["loc"].GetArray()) {
    loc += (loc.empty() ? "" : ".") + std::string(part.GetString());
  }
  return loc;
}

bool ReferenceGenomeFixture::Open(const std::string& dir_prefix, std::string* reason) {
  std::string failure;
  svc = Service::Get(&failure);
  if (svc == nullptr) {
    *reason = "the integration service did not start: " + failure;
    return false;
  }
  auto catalogue = BuildCatalogue({}, reason);
  if (!catalogue) return false;
  built = *catalogue;
  auto opened = variant::ReferenceGenome::Open(built.fasta);
  if (!opened.ok()) {
    *reason = opened.status().message();
    return false;
  }
  reference = std::move(opened).value();
  dir = MakeTempDir(dir_prefix);
  return true;
}

std::string ReferenceGenomeFixture::Cut(int64_t start, int64_t end) const {
  auto bases = reference->Fetch("20", start - 1, end);
  REQUIRE(bases.ok());
  return *bases;
}

bool ReferenceGenomeFixture::ReadAcceptors(size_t least, size_t most,
                                           std::vector<int64_t>* acceptor_g,
                                           std::vector<int64_t>* boundaries,
                                           std::string* reason) const {
  auto gz = DebianPackageFile(
      "subread-data", "usr/share/doc/subread/examples/annotation/hg19_RefSeq_exon.txt.gz",
      reason);
  if (!gz) return false;
  gzFile f = gzopen(gz->c_str(), "rb");
  if (!f) {
    *reason = "cannot open " + *gz;
    return false;
  }
  std::map<std::string, std::set<int64_t>> plus_starts;  // gene -> exon starts
  char line[4096];
  while (gzgets(f, line, sizeof line)) {
    std::istringstream fields(line);
    std::string gene, chr, strand;
    int64_t start = 0, end = 0;
    if (!(fields >> gene >> chr >> start >> end >> strand)) continue;
    if (chr != "chr20") continue;
    if (boundaries != nullptr) {
      boundaries->push_back(start);
      boundaries->push_back(end);
    }
    if (strand == "+") plus_starts[gene].insert(start);
  }
  gzclose(f);
  if (boundaries != nullptr) std::sort(boundaries->begin(), boundaries->end());
  for (const auto& [gene, starts] : plus_starts) {
    if (acceptor_g->size() == most) break;
    if (starts.size() < 3) continue;
    const int64_t exon = *std::next(starts.begin());  // the second exon: internal
    if (Base(exon - 2, 2) == "AG") acceptor_g->push_back(exon - 1);
  }
  if (acceptor_g->size() < least) {
    *reason = "fewer than " + std::to_string(least) + " AG acceptors found in " + *gz;
    return false;
  }
  return true;
}

bool ReferenceStack::Start(int db, bool bundled_splice, const std::string& roster_task,
                           std::string* reason) {
  if (bundled_splice) {
    if (!StartBundledSpliceWorker(dir, &splice, reason)) return false;
    workers = WorkersWithSplice(*svc, splice.address());
  }
  if (!StartReferenceStack(*svc, db, workers, built, roster_task, dir, &runner, &gateway,
                           reason)) {
    return false;
  }
  base = gateway.base_url();
  return true;
}

HttpResult ReferenceStack::Post(const std::string& path, const std::string& body,
                                std::vector<std::string> extra_headers) const {
  return PostJson(base, svc->keys().alice, path, body, std::move(extra_headers));
}

}  // namespace dnaserve::testing
