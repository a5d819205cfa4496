// Admission of the genomic-variant-interpretation request body: JSON -> typed fields, applying
// the schema table (VariantRequestSchema() in request_schema.h: closed objects, input.type
// s3_object, uri 8-1,024 characters, client_ref <= 128, genome_build GRCh37, window 1-100,000
// default 5,000, tissues 1-16 default heart/liver/brain, genes 1-1,000 or null). What needs the
// object store or the catalogue (the URI's form, the gene panel, the object itself) is checked
// afterwards by the handler (gateway/handlers/variant_handler.h).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace dnaserve::core {

// The workflow's name in data.task, meta.task and job records.
inline constexpr std::string_view kVariantWorkflow = "genomic_variant_interpretation";
// input.type's one value today, and the only genome build.
inline constexpr std::string_view kS3ObjectInput = "s3_object";
inline constexpr std::string_view kGrch37 = "GRCh37";
inline constexpr int64_t kDefaultVariantWindowBp = 5000;
inline constexpr int64_t kMaxGenePanelSize = 1000;
// The input object's size bounds (1 byte to 2 GiB).
inline constexpr int64_t kMaxVcfObjectBytes = 2LL * 1024 * 1024 * 1024;

struct ValidatedVariant {
  std::string uri;                        // input.uri as sent (its form is checked later)
  std::optional<std::string> client_ref;  // nullopt when omitted or null
  std::string genome_build;               // "GRCh37"
  int64_t window = kDefaultVariantWindowBp;
  std::vector<std::string> tissues;  // in request order, repeats kept (one column each)
  // nullopt when omitted or null: every catalogue gene counts.
  std::optional<std::vector<std::string>> genes;
};

// Malformed JSON -> 400 bad_request; every schema violation (unknown keys, wrong types, bounds,
// an empty genes list) -> 422 validation_failed with details.errors.
StatusOr<ValidatedVariant> ValidateVariantBody(std::string_view body);

}  // namespace dnaserve::core
