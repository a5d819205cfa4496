// Quantiles of POST /v1/variants/score: where a variant's delta falls among the same scorer's
// deltas for a fixed-seed background of random held-out SNVs, which a model package may ship
// (manifest "variant_background", worker/manifest/variant_background.h; made by
// scripts/evaluate-models, training/variant_background.py). The worker serves it as one of the
// package's card files (GetModelCard "variant_background.json", built from what it read at
// load); the runner asks once per package digest and keeps it (BackgroundCache).
//
// quantile = the share of background values <= the variant's value, both as published (rounded
// to 4 decimals), so a client can recompute it from the shipped file. Statistics: splice DS_AG,
// DS_AL, DS_DG, DS_DL and DS_max of the strand the response reports; promoter abs_delta;
// chromatin abs_delta:<feature name>; expression abs_log2_fold_change:<context id>. A scorer
// whose package ships no background (or one made for another scorer, or at another distance
// than the request's) gets null quantiles and a reason, never a made-up figure.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "common/status.h"

namespace dnaserve::runner {

// Share of `sorted` (ascending) <= `value`; nullopt when `sorted` is empty.
std::optional<double> QuantileOf(const std::vector<double>& sorted, double value);

// A package's background as its worker serves it (worker/manifest/variant_background.h).
struct ShippedBackground {
  std::string model, scorer, region;
  int64_t seed = 0, snvs = 0, distance = 0;
  std::vector<std::pair<std::string, std::vector<double>>> statistics;  // values ascending
};

// The worker's variant_background.json; invalid_argument naming what is wrong.
StatusOr<ShippedBackground> ParseShippedBackground(const std::string& json);

// One scorer's background as this request can use it.
struct ScorerBackground {
  bool available = false;
  std::string reason;  // why not, when !available
  int64_t seed = 0, snvs = 0, distance = 0;
  std::string region;
  std::vector<std::pair<std::string, std::vector<double>>> statistics;  // values ascending

  // The quantile of `value` for `statistic`; nullopt when unavailable or not in the background.
  std::optional<double> Quantile(const std::string& statistic, double value) const;
};

// What `shipped` (null: the package of `model` ships none) gives `scorer` ("splice", ...).
// `distance`: the request's, compared with the one the background was scored at; nullopt for
// scorers without a distance.
ScorerBackground BackgroundFor(const ShippedBackground* shipped, const std::string& model,
                               const std::string& scorer, std::optional<int64_t> distance);

// Packages' backgrounds by package digest (a digest covers the background, so an entry never
// goes stale), shared by every request of a runner. "No background" is kept as well.
class BackgroundCache {
 public:
  using Fetch = std::function<StatusOr<std::string>()>;  // the JSON, or not_found
  // The background of the package `digest` names, fetched on first use. Errors other than
  // not_found are returned and not kept (the next request asks again).
  StatusOr<std::shared_ptr<const ShippedBackground>> Get(const std::string& digest,
                                                         const Fetch& fetch);
  static BackgroundCache& Shared();

 private:
  std::mutex mu_;
  std::map<std::string, std::shared_ptr<const ShippedBackground>> by_digest_;
};

// The backgrounds of the scorers a request ran (each set when that scorer ran).
struct VariantBackgrounds {
  std::optional<ScorerBackground> splice, expression, chromatin, promoter;
};

}  // namespace dnaserve::runner
