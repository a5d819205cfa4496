// The reference stack of the integration tests that ask by genome position (interval, ISM,
// variant scoring, the answer cache, the viewer's locus box): the integration service, the
// GRCh37 chr20 reference opened here (scripts/build-catalogue, Debian vt-examples), and a runner
// that holds it with a gateway of its own on a database of its own, optionally with the bundled
// splice-human package as its splice worker. One per test process, stopped at exit.
#pragma once

#include <rapidjson/document.h>

#include <catch2/catch.hpp>

#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "runner/genome/reference_genome.h"
#include "tests/integration/service_fixture.h"
#include "tests/support/variant_data.h"

namespace dnaserve::testing {

// POST of a JSON `body` to `path` at the gateway `base`, as the client whose key is `key`,
// checked against the OpenAPI document that gateway serves (GatewayRequest).
HttpResult PostJson(const std::string& base, const std::string& key, const std::string& path,
                    const std::string& body, std::vector<std::string> extra_headers = {},
                    long timeout_seconds = 300);

// The first error's location in an error envelope, joined by '.' ("body.window"); fails the
// current test when the envelope lists no error.
std::string FirstErrorLocation(const rapidjson::Value& envelope);

// The integration service and the chr20 reference, opened; a scratch directory. Fixtures that
// start stacks of their own shape derive from it.
struct ReferenceGenomeFixture {
  Service* svc = nullptr;
  BuiltCatalogue built;
  std::unique_ptr<variant::ReferenceGenome> reference;
  std::string dir;

  virtual ~ReferenceGenomeFixture() = default;

  // Starts (or finds) the integration service, builds the catalogue, opens its FASTA and makes
  // the scratch directory MakeTempDir(`dir_prefix`). False with the reason.
  bool Open(const std::string& dir_prefix, std::string* reason);
  // chr20 bases [start, end], 1-based inclusive, as the reference reads them.
  std::string Cut(int64_t start, int64_t end) const;
  // `n` chr20 bases from `pos1` (1-based).
  std::string Base(int64_t pos1, int64_t n = 1) const { return Cut(pos1, pos1 + n - 1); }
  // From the RefSeq exon table the catalogue is built from (Debian subread-data), in gene order:
  // the G (1-based) of the AG of the second exon of chr20 '+' genes, checked against the
  // reference, at most `most` of them; every chr20 exon start and end, sorted, in *boundaries
  // when given. False with the reason when the table cannot be had or fewer than `least` are.
  bool ReadAcceptors(size_t least, size_t most, std::vector<int64_t>* acceptor_g,
                     std::vector<int64_t>* boundaries, std::string* reason) const;
};

// One runner holding the reference and one gateway, on database `db` of the service's Redis.
struct ReferenceStack : ReferenceGenomeFixture {
  std::string base;       // the gateway's URL
  std::string workers;    // the runner's DNASERVE_WORKERS ("" = the service's)
  LaunchedWorker splice;  // the bundled splice-human package, when started
  LaunchedGateway gateway;
  ChildProcess runner;

  // After Open: the bundled splice-human worker when `bundled_splice` (the service's splice
  // default: per-base with a flank; the integration service's are tiny models), then the runner
  // and gateway, ready once the gateway lists `roster_task`'s models.
  bool Start(int db, bool bundled_splice, const std::string& roster_task, std::string* reason);
  // PostJson to this stack's gateway as the client "alice".
  HttpResult Post(const std::string& path, const std::string& body,
                  std::vector<std::string> extra_headers = {}) const;
};

// The fixture `Make` makes, once per test process (one per `Make`: two test files may share a
// fixture type, never an instance), on first use: nullptr with the reason in *skip when it
// cannot be. Deleted at exit, so the processes it started are stopped before the integration
// service's (atexit runs in reverse order): left running, every test process would leave them
// behind.
template <typename Fixture, std::unique_ptr<Fixture> (*Make)(std::string* reason)>
Fixture* SharedFixture(std::string* skip) {
  static std::string reason;
  static Fixture* instance = []() -> Fixture* {
    std::unique_ptr<Fixture> made = Make(&reason);
    if (!made) return nullptr;
    std::atexit([] { delete instance; });
    return made.release();
  }();
  *skip = reason;
  return instance;
}

}  // namespace dnaserve::testing

// `Type* var` made by `make` (SharedFixture), or a warning with the reason and return: the
// reference comes from Debian packages that may not be had.
#define REQUIRE_SHARED_FIXTURE(Type, var, make)                                   \
  std::string var##_skip;                                                         \
  Type* var = ::dnaserve::testing::SharedFixture<Type, make>(&var##_skip);        \
  if (var == nullptr) {                                                           \
    WARN("skipped: " << var##_skip);                                              \
    return;                                                                       \
  }
