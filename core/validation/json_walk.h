// Checks a parsed JSON object against a closed ObjectSpec (request_schema.h) and collects every
// violation pydantic-style, then hands back the values that passed, typed.
//
// Error `type` vocabulary (pydantic v2 names; `msg` texts follow pydantic's wording):
//   missing                  required field absent
//   extra_forbidden          key not in the closed object
//   model_attributes_type    an object was expected (the body itself, `options`)
//   string_type, int_type, float_type, bool_type, list_type
//                            wrong JSON type (null counts as wrong unless the field is nullable;
//                            booleans are never numbers)
//   int_from_float           integer field given a number with a fractional part
//   greater_than_equal, less_than_equal
//                            numeric bounds (inclusive)
//   string_too_short, string_too_long
//                            string length in characters; for a DNA sequence the bounds are in
//                            bp after whitespace stripping and msg states bound and length
//   string_pattern_mismatch  DNA sequence alphabet (includes a '>' FASTA header, no bases)
//   too_short, too_long      array with fewer or more items than allowed (e.g. empty
//                            site_types, an empty genes list, 17 tissues)
//   literal_error            value outside an allowed set (site_types items, shift_coordinates,
//                            input.type, genome_build)
//   value_error              cross-field rules checked after the fields (predict_request.cc)
#pragma once

#include <rapidjson/document.h>

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "common/status.h"
#include "core/validation/request_schema.h"

namespace dnaserve::core {

// The fields of one checked object that passed every check (absent, null and invalid fields are
// not here). DNA sequence fields hold their normalised bases. A nested object is present whenever
// the value was an object; its own fields follow the same rule and Failed() tells whether
// anything inside it failed.
class CheckedObject {
 public:
  bool Has(std::string_view name) const;
  // True when the field, or anything inside it, produced an error.
  bool Failed(std::string_view name) const;

  std::optional<double> Number(std::string_view name) const;  // kNumber or kInteger
  std::optional<int64_t> Integer(std::string_view name) const;
  std::optional<bool> Boolean(std::string_view name) const;
  const std::string* String(std::string_view name) const;
  const std::vector<std::string>* Strings(std::string_view name) const;
  const CheckedObject* Object(std::string_view name) const;

 private:
  friend bool CheckObject(const ObjectSpec&, const rapidjson::Value&,
                          const std::vector<std::string>&, std::vector<FieldError>*,
                          CheckedObject*);
  using Value = std::variant<bool, int64_t, double, std::string, std::vector<std::string>,
                             std::shared_ptr<CheckedObject>>;
  std::map<std::string, Value, std::less<>> values_;
  std::set<std::string, std::less<>> failed_;
};

// At most this many errors are reported per body: a 16 MiB body of unknown keys must not turn
// into an error response many times its size. Checking itself continues past the cap.
inline constexpr size_t kMaxFieldErrors = 100;

// Parses a request body into `doc`. Iterative parsing, so a deeply nested body cannot exhaust
// the stack; invalid UTF-8 is refused so that string lengths are well defined. Malformed JSON ->
// 400 bad_request naming the parse error and its byte offset; a key repeated in any object ->
// 400 bad_request naming it (common/json_keys.h).
Status ParseJsonBody(std::string_view body, rapidjson::Document* doc);

// The 422 validation_failed for collected errors (REQUIRES at least one): details.errors holds
// them all, the message summarises the first ("body.sequence: ... (and 2 more errors)").
Status ValidationFailedStatus(std::vector<FieldError> errors);

// Appends `error` unless kMaxFieldErrors are already reported.
void Report(std::vector<FieldError>* errors, FieldError error);

// Checks `value` (expected to be an object) against `spec`; errors are reported with locations
// `loc` + field name. Non-object input yields one model_attributes_type error at `loc`. Returns
// false when anything in the object failed (even if the error cap dropped its report).
bool CheckObject(const ObjectSpec& spec, const rapidjson::Value& value,
                 const std::vector<std::string>& loc, std::vector<FieldError>* errors,
                 CheckedObject* out);

// Number of Unicode code points in valid UTF-8 text (what pydantic's length limits count).
int64_t Utf8Length(std::string_view text);

// "0.5", "1", "128": bounds as a reader expects them in messages.
std::string FormatNumber(double value);

}  // namespace dnaserve::core
