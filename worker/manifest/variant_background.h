// A package's variant background (manifest "variant_background"; worker/README.md): the scorer
// statistics of a fixed-seed set of random SNVs, which POST /v1/variants/score turns into
// quantiles. Made and shipped by scripts/evaluate-models (training/variant_background.py).
//
//   "variant_background": {"file": "variant_background.tsv", "scorer": "splice", "seed": 2511,
//                          "snvs": 1000, "region": "chr20:53031521-63019520", "distance": 50}
//
// The file: a header "variant<TAB><statistic>..." and one row per SNV, the variant then one
// finite number per statistic. Kept here sorted ascending per statistic, for quantiles.
#pragma once

#include <rapidjson/document.h>

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "common/status.h"

namespace dnaserve::worker {

struct VariantBackground {
  std::string file;    // package-relative, as the manifest names it
  std::string scorer;  // the variant scorer it was made for ("splice")
  int64_t seed = 0;
  int64_t snvs = 0;
  std::string region;
  int64_t distance = 0;
  // (statistic, values ascending), in file column order; filled by LoadVariantBackgroundTable.
  std::vector<std::pair<std::string, std::vector<double>>> statistics;
};

// Parses the manifest entry: every field required, no others. Errors name the field:
// "'variant_background.snvs' must be ...".
StatusOr<VariantBackground> ParseVariantBackgroundEntry(const rapidjson::Value& entry);

// Reads `path` into `background->statistics`; the row count must equal `snvs`.
Status LoadVariantBackgroundTable(const std::string& path, VariantBackground* background);

// The background a package's manifest (its text) declares, read from `package_dir`; nullopt
// when it declares none. LoadManifest reads it once to check it and hash it into the package
// digest; GetModelCard reads it again when asked (the runner keeps it per digest), so the worker
// holds no copy.
StatusOr<std::optional<VariantBackground>> LoadPackageBackground(const std::string& package_dir,
                                                                 const std::string& manifest_text);

// The name GetModelCard (and so GET /v1/models/{model}/card/{file}) serves the background under:
// VariantBackgroundJson of a package that ships one, not_found otherwise.
inline constexpr const char* kVariantBackgroundCardFile = "variant_background.json";

// {"model", "package_digest", "file", "scorer", "seed", "snvs", "region", "distance",
//  "statistics": {"<name>": [values ascending], ...}}: what the runner's quantiles read
// (runner/workflows/variant_quantiles.h).
std::string VariantBackgroundJson(const VariantBackground& background, const std::string& model,
                                  const std::string& package_digest);

}  // namespace dnaserve::worker
