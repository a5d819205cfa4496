// The request schemas of the six predict tasks and the two workflows, as data.
//
// This table is the one source of the request contract: the validators (predict_request.cc,
// find_genes_request.cc, via json_walk.h) enforce it and the OpenAPI builder (gateway/openapi/openapi.cc) publishes it, so
// the served contract cannot drift from what the gateway admits. Rules that relate two fields
// (expression's tss_index window, the region label of shift_coordinates) are not expressible
// here; they live in predict_request.cc / find_genes_request.cc and are stated in the fields'
// descriptions.
//
// Every object is closed: a key that is not listed is `extra_forbidden`.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "common/task.h"

namespace dnaserve::core {

// The JSON type a field accepts besides null (nullability is separate). kInteger accepts any
// JSON number without a fractional part (JSON Schema's meaning of "integer"), kNumber any
// number; booleans are never numbers.
enum class FieldType { kString, kNumber, kInteger, kBoolean, kStringArray, kObject };

// A field's documented default; monostate = no default (absent means "not given").
using FieldDefault =
    std::variant<std::monostate, bool, int64_t, double, std::string, std::vector<std::string>>;

struct ObjectSpec;

struct FieldSpec {
  std::string name;
  FieldType type = FieldType::kString;
  bool required = false;
  bool nullable = false;  // null accepted and treated as "not given"
  // kNumber / kInteger bounds, inclusive.
  std::optional<double> minimum;
  std::optional<double> maximum;
  // kString length bounds in characters (Unicode code points). For a DNA sequence field they
  // are bounds in bp, measured after whitespace stripping.
  std::optional<int64_t> min_length;
  std::optional<int64_t> max_length;
  // A DNA sequence: ASCII whitespace stripped, then case-insensitive A/C/G/T/N, at least one
  // base (kDnaPattern).
  bool dna_sequence = false;
  // kString: when non-empty, the only accepted values, compared case-insensitively unless
  // `exact_values` (a discriminator such as input.type, published as an enum).
  std::vector<std::string> accepted_values;
  bool exact_values = false;
  // kString: a regular expression published as the field's `pattern`. The walker does not
  // enforce it: the field's own admission code does (the variant workflow's input.uri, whose
  // form the contract makes a 400 pre-acceptance check), and says so in the description.
  std::string pattern;
  // kStringArray: the allowed items (exact match), the bounds on the number of items and the
  // minimum length of each item.
  std::vector<std::string> item_values;
  std::optional<int64_t> min_items;
  std::optional<int64_t> max_items;
  std::optional<int64_t> item_min_length;
  // kStringArray: items are handed back as sent (order and repeats kept, e.g. one scoring run
  // per tissue) instead of as a distinct set.
  bool items_as_sent = false;
  std::string description;
  FieldDefault default_value;
  const ObjectSpec* object = nullptr;  // kObject: the closed nested object
};

struct ObjectSpec {
  std::string title;  // component name in the OpenAPI document, e.g. "PromoterOptions"
  std::string description;
  std::vector<FieldSpec> fields;
  // Fields of which exactly one must be given (sequence, interval), published as
  // oneOf [{required: [a]}, {required: [b]}]; the validators enforce it themselves.
  std::vector<std::string> exactly_one_of;

  const FieldSpec* Find(std::string_view name) const;
};

// The published sequence pattern (the regular expression itself, not JSON-escaped).
inline constexpr std::string_view kDnaPattern = "^\\s*(?:[ACGNTacgnt]\\s*)+$";
// Length cap of `model` and `sequence_name`.
inline constexpr int64_t kMaxNameLength = 128;

// The top-level request body of a task's predict operation (its `options` field points at the
// task's options object).
const ObjectSpec& PredictRequestSchema(Task task);
// The task's `options` object (also reachable through PredictRequestSchema).
const ObjectSpec& PredictOptionsSchema(Task task);

// The find-genes-and-predict-expression workflow's request body and its options object.
const ObjectSpec& FindGenesRequestSchema();
const ObjectSpec& FindGenesOptionsSchema();

// The genomic-variant-interpretation workflow's request body and its nested objects.
const ObjectSpec& VariantRequestSchema();
const ObjectSpec& VariantInputSchema();
const ObjectSpec& VariantOptionsSchema();

// Field defaults, typed. When the table holds no default of the asked type they return a zero
// value (a table error the unit tests would catch).
double DefaultNumber(const FieldSpec& field);
int64_t DefaultInteger(const FieldSpec& field);
bool DefaultBoolean(const FieldSpec& field);
std::string DefaultString(const FieldSpec& field);
std::vector<std::string> DefaultStrings(const FieldSpec& field);

}  // namespace dnaserve::core
