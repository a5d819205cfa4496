#include "core/validation/json_walk.h"

#include "core/validation/json_shape.h"

#include <rapidjson/error/en.h>

#include <cmath>
#include <cstdio>
#include <limits>

#include "common/json_keys.h"
#include "common/sequence.h"

namespace dnaserve::core {
namespace {

std::vector<std::string> At(const std::vector<std::string>& loc, std::string key) {
  std::vector<std::string> out = loc;
  out.push_back(std::move(key));
  return out;
}

// True when no byte has its high bit set. OR-ing the bytes keeps the loop branch-free, so the
// compiler vectorises it.
bool IsAscii(std::string_view text) {
  unsigned char any_high = 0;
  for (const char c : text) any_high |= static_cast<unsigned char>(c);
  return (any_high & 0x80) == 0;
}

char AsciiLower(char c) { return (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c; }

bool EqualsIgnoreCase(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (AsciiLower(a[i]) != AsciiLower(b[i])) return false;
  }
  return true;
}

// 'donor' or 'acceptor' / 'UCSC'
std::string QuotedAlternatives(const std::vector<std::string>& values) {
  std::string out;
  for (size_t i = 0; i < values.size(); ++i) {
    if (i > 0) out += (i + 1 == values.size()) ? " or " : ", ";
    out += "'" + values[i] + "'";
  }
  return out;
}

// A character of a rejected sequence, printable in a message.
std::string ShowChar(char c) {
  auto u = static_cast<unsigned char>(c);
  if (u >= 0x21 && u < 0x7f && c != '\'') return std::string(1, c);
  char buf[8];
  std::snprintf(buf, sizeof(buf), "\\x%02X", u);
  return buf;
}

std::string TypeError(FieldType type) {
  switch (type) {
    case FieldType::kString:
      return "string_type";
    case FieldType::kNumber:
      return "float_type";
    case FieldType::kInteger:
      return "int_type";
    case FieldType::kBoolean:
      return "bool_type";
    case FieldType::kStringArray:
      return "list_type";
    case FieldType::kObject:
      return "model_attributes_type";
  }
  return "value_error";
}

std::string TypeMessage(FieldType type) {
  switch (type) {
    case FieldType::kString:
      return "Input should be a valid string";
    case FieldType::kNumber:
      return "Input should be a valid number";
    case FieldType::kInteger:
      return "Input should be a valid integer";
    case FieldType::kBoolean:
      return "Input should be a valid boolean";
    case FieldType::kStringArray:
      return "Input should be a valid list";
    case FieldType::kObject:
      return "Input should be a valid dictionary or object to extract fields from";
  }
  return "Input is invalid";
}

int64_t Saturate(double d) {
  if (d >= 9.2e18) return std::numeric_limits<int64_t>::max();
  if (d <= -9.2e18) return std::numeric_limits<int64_t>::min();
  return static_cast<int64_t>(d);
}

class FieldChecker {
 public:
  FieldChecker(const FieldSpec& spec, std::vector<std::string> loc, std::vector<FieldError>* errors)
      : spec_(spec), loc_(std::move(loc)), errors_(errors) {}

  bool ok() const { return ok_; }
  void MarkFailed() { ok_ = false; }

  void Fail(std::vector<std::string> loc, std::string msg, std::string type) {
    Report(errors_, FieldError{std::move(loc), std::move(msg), std::move(type)});
    ok_ = false;
  }
  void Fail(std::string msg, std::string type) { Fail(loc_, std::move(msg), std::move(type)); }

  void CheckBounds(double v) {
    if (spec_.minimum && v < *spec_.minimum) {
      Fail("Input should be greater than or equal to " + FormatNumber(*spec_.minimum),
           "greater_than_equal");
    } else if (spec_.maximum && v > *spec_.maximum) {
      Fail("Input should be less than or equal to " + FormatNumber(*spec_.maximum),
           "less_than_equal");
    }
  }

  std::optional<double> CheckNumber(const rapidjson::Value& v) {
    if (!v.IsNumber()) {
      Fail(TypeMessage(spec_.type), TypeError(spec_.type));
      return std::nullopt;
    }
    double d = v.GetDouble();
    CheckBounds(d);
    return d;
  }

  std::optional<int64_t> CheckInteger(const rapidjson::Value& v) {
    if (!v.IsNumber()) {
      Fail(TypeMessage(spec_.type), TypeError(spec_.type));
      return std::nullopt;
    }
    int64_t i;
    double d;
    if (v.IsInt64()) {
      i = v.GetInt64();
      d = static_cast<double>(i);
    } else if (v.IsUint64()) {
      i = std::numeric_limits<int64_t>::max();
      d = static_cast<double>(v.GetUint64());
    } else {
      d = v.GetDouble();
      if (!std::isfinite(d) || std::floor(d) != d) {
        Fail("Input should be a valid integer, got a number with a fractional part",
             "int_from_float");
        return std::nullopt;
      }
      i = Saturate(d);
    }
    CheckBounds(d);
    return i;
  }

  std::optional<std::string> CheckString(const rapidjson::Value& v) {
    if (!v.IsString()) {
      Fail(TypeMessage(spec_.type), TypeError(spec_.type));
      return std::nullopt;
    }
    std::string_view s(v.GetString(), v.GetStringLength());
    if (spec_.dna_sequence) return CheckDna(s);
    int64_t length = Utf8Length(s);
    if (spec_.min_length && length < *spec_.min_length) {
      Fail("String should have at least " + std::to_string(*spec_.min_length) +
               (*spec_.min_length == 1 ? " character" : " characters"),
           "string_too_short");
    } else if (spec_.max_length && length > *spec_.max_length) {
      Fail("String should have at most " + std::to_string(*spec_.max_length) + " characters",
           "string_too_long");
    }
    if (!spec_.accepted_values.empty()) {
      bool accepted = false;
      for (const auto& a : spec_.accepted_values) {
        accepted = accepted || (spec_.exact_values ? a == s : EqualsIgnoreCase(a, s));
      }
      if (!accepted) {
        Fail("Input should be " + QuotedAlternatives(spec_.accepted_values) +
                 (spec_.exact_values ? "" : " (case-insensitive)"),
             "literal_error");
      }
    }
    return std::string(s);
  }

  std::optional<std::string> CheckDna(std::string_view raw) {
    NormalizedSequence n = NormalizeSequence(raw);
    const std::string pattern_msg =
        "String should match pattern '" + std::string(kDnaPattern) + "'";
    if (n.first_invalid) {
      std::string msg = pattern_msg + ": invalid character '" + ShowChar(n.invalid_char) +
                        "' at position " + std::to_string(*n.first_invalid) +
                        " of the whitespace-stripped sequence (only A, C, G, T, N are allowed";
      msg += n.invalid_char == '>' ? "; a FASTA header line is not accepted)" : ")";
      Fail(std::move(msg), "string_pattern_mismatch");
      return std::nullopt;
    }
    if (n.bases.empty()) {
      Fail(pattern_msg + ": no bases after whitespace removal", "string_pattern_mismatch");
      return std::nullopt;
    }
    auto length = static_cast<int64_t>(n.bases.size());
    if (spec_.min_length && length < *spec_.min_length) {
      Fail(spec_.name + " must be at least " + std::to_string(*spec_.min_length) +
               " bp after whitespace removal; got " + std::to_string(length) + " bp",
           "string_too_short");
      return std::nullopt;
    }
    if (spec_.max_length && length > *spec_.max_length) {
      Fail(spec_.name + " must be at most " + std::to_string(*spec_.max_length) +
               " bp after whitespace removal; got " + std::to_string(length) + " bp",
           "string_too_long");
      return std::nullopt;
    }
    return std::move(n.bases);
  }

  std::optional<std::vector<std::string>> CheckStrings(const rapidjson::Value& v) {
    if (!v.IsArray()) {
      Fail(TypeMessage(spec_.type), TypeError(spec_.type));
      return std::nullopt;
    }
    auto count = static_cast<int64_t>(v.Size());
    if (spec_.min_items && count < *spec_.min_items) {
      Fail("List should have at least " + std::to_string(*spec_.min_items) +
               (*spec_.min_items == 1 ? " item" : " items") + " after validation, not " +
               std::to_string(count),
           "too_short");
      return std::nullopt;
    }
    if (spec_.max_items && count > *spec_.max_items) {
      Fail("List should have at most " + std::to_string(*spec_.max_items) +
               (*spec_.max_items == 1 ? " item" : " items") + " after validation, not " +
               std::to_string(count),
           "too_long");
      return std::nullopt;
    }
    // Distinct items, in the table's order (repeats are harmless and dropped), unless the
    // field keeps its items as sent.
    std::set<std::string> seen;
    std::vector<std::string> as_sent;
    for (rapidjson::SizeType i = 0; i < v.Size(); ++i) {
      const auto& item = v[i];
      auto item_loc = At(loc_, std::to_string(i));
      if (!item.IsString()) {
        Fail(item_loc, "Input should be a valid string", "string_type");
        continue;
      }
      std::string s(item.GetString(), item.GetStringLength());
      if (spec_.item_min_length && Utf8Length(s) < *spec_.item_min_length) {
        Fail(item_loc,
             "String should have at least " + std::to_string(*spec_.item_min_length) +
                 (*spec_.item_min_length == 1 ? " character" : " characters"),
             "string_too_short");
        continue;
      }
      bool allowed = spec_.item_values.empty();
      for (const auto& a : spec_.item_values) allowed = allowed || a == s;
      if (!allowed) {
        Fail(item_loc, "Input should be " + QuotedAlternatives(spec_.item_values), "literal_error");
        continue;
      }
      if (spec_.items_as_sent) as_sent.push_back(s);
      seen.insert(std::move(s));
    }
    if (!ok_) return std::nullopt;
    if (spec_.items_as_sent) return as_sent;
    std::vector<std::string> out;
    if (spec_.item_values.empty()) {
      out.assign(seen.begin(), seen.end());
    } else {
      for (const auto& a : spec_.item_values) {
        if (seen.count(a)) out.push_back(a);
      }
    }
    return out;
  }

 private:
  const FieldSpec& spec_;
  std::vector<std::string> loc_;
  std::vector<FieldError>* errors_;
  bool ok_ = true;
};

}  // namespace

bool CheckedObject::Has(std::string_view name) const { return values_.count(name) > 0; }
bool CheckedObject::Failed(std::string_view name) const { return failed_.count(name) > 0; }

std::optional<double> CheckedObject::Number(std::string_view name) const {
  auto it = values_.find(name);
  if (it == values_.end()) return std::nullopt;
  if (const auto* d = std::get_if<double>(&it->second)) return *d;
  if (const auto* i = std::get_if<int64_t>(&it->second)) return static_cast<double>(*i);
  return std::nullopt;
}

std::optional<int64_t> CheckedObject::Integer(std::string_view name) const {
  auto it = values_.find(name);
  if (it == values_.end()) return std::nullopt;
  if (const auto* i = std::get_if<int64_t>(&it->second)) return *i;
  return std::nullopt;
}

std::optional<bool> CheckedObject::Boolean(std::string_view name) const {
  auto it = values_.find(name);
  if (it == values_.end()) return std::nullopt;
  if (const auto* b = std::get_if<bool>(&it->second)) return *b;
  return std::nullopt;
}

const std::string* CheckedObject::String(std::string_view name) const {
  auto it = values_.find(name);
  return it == values_.end() ? nullptr : std::get_if<std::string>(&it->second);
}

const std::vector<std::string>* CheckedObject::Strings(std::string_view name) const {
  auto it = values_.find(name);
  return it == values_.end() ? nullptr : std::get_if<std::vector<std::string>>(&it->second);
}

const CheckedObject* CheckedObject::Object(std::string_view name) const {
  auto it = values_.find(name);
  if (it == values_.end()) return nullptr;
  const auto* p = std::get_if<std::shared_ptr<CheckedObject>>(&it->second);
  return p ? p->get() : nullptr;
}

bool CheckObject(const ObjectSpec& spec, const rapidjson::Value& value,
                 const std::vector<std::string>& loc, std::vector<FieldError>* errors,
                 CheckedObject* out) {
  if (!value.IsObject()) {
    Report(errors, FieldError{loc, TypeMessage(FieldType::kObject), TypeError(FieldType::kObject)});
    return false;
  }
  bool ok = true;
  // ParseJsonBody refuses a body that repeats a key; were one to reach here, its last value
  // would count (as json.loads does).
  std::map<std::string_view, const rapidjson::Value*> members;
  std::vector<std::string_view> order;
  for (auto m = value.MemberBegin(); m != value.MemberEnd(); ++m) {
    std::string_view key(m->name.GetString(), m->name.GetStringLength());
    if (members.count(key) == 0) order.push_back(key);
    members[key] = &m->value;
  }
  for (const FieldSpec& field : spec.fields) {
    auto it = members.find(field.name);
    auto field_loc = At(loc, field.name);
    if (it == members.end()) {
      if (field.required) {
        Report(errors, FieldError{field_loc, "Field required", "missing"});
        out->failed_.insert(field.name);
        ok = false;
      }
      continue;
    }
    const rapidjson::Value& v = *it->second;
    if (v.IsNull() && field.nullable) continue;

    FieldChecker checker(field, field_loc, errors);
    CheckedObject::Value result;
    switch (field.type) {
      case FieldType::kString:
        if (auto s = checker.CheckString(v); checker.ok()) result = std::move(*s);
        break;
      case FieldType::kNumber:
        if (auto d = checker.CheckNumber(v); checker.ok()) result = *d;
        break;
      case FieldType::kInteger:
        if (auto i = checker.CheckInteger(v); checker.ok()) result = *i;
        break;
      case FieldType::kBoolean:
        if (!v.IsBool()) {
          checker.Fail(TypeMessage(field.type), TypeError(field.type));
        } else {
          result = v.GetBool();
        }
        break;
      case FieldType::kStringArray:
        if (auto a = checker.CheckStrings(v); checker.ok()) result = std::move(*a);
        break;
      case FieldType::kObject: {
        auto child = std::make_shared<CheckedObject>();
        if (field.object != nullptr &&
            !CheckObject(*field.object, v, field_loc, errors, child.get())) {
          checker.MarkFailed();  // its errors are already reported
        }
        // A nested object is kept even when some of its fields failed: its own fields are
        // individually checked, so cross-field rules can still use the valid ones.
        if (v.IsObject()) out->values_[field.name] = std::move(child);
        break;
      }
    }
    if (!checker.ok()) {
      out->failed_.insert(field.name);
      ok = false;
    } else if (field.type != FieldType::kObject) {
      out->values_[field.name] = std::move(result);
    }
  }
  // Unknown keys after the declared fields (pydantic's order), in the client's order.
  for (std::string_view key : order) {
    if (spec.Find(key) == nullptr) {
      Report(errors, FieldError{At(loc, std::string(key)), "Extra inputs are not permitted",
                                "extra_forbidden"});
      ok = false;
    }
  }
  return ok;
}

Status ParseJsonBody(std::string_view body, rapidjson::Document* doc) {
  // Depth and value-count limits before RapidJSON builds a DOM (see json_shape.h).
  DNASERVE_RETURN_IF_ERROR(CheckJsonShape(body));
  // RapidJSON validates UTF-8 one byte at a time through a per-byte state machine, which cost
  // about 80k instructions on a 2 kb predict body (callgrind). Almost every body is pure ASCII,
  // which is valid UTF-8 as it stands, so a plain scan (that the compiler vectorises) decides
  // whether the validating parse is needed; \u escapes are checked by the parser either way.
  constexpr unsigned kAsciiFlags = rapidjson::kParseIterativeFlag;
  constexpr unsigned kValidatingFlags = kAsciiFlags | rapidjson::kParseValidateEncodingFlag;
  if (IsAscii(body)) {
    doc->Parse<kAsciiFlags>(body.data(), body.size());
  } else {
    doc->Parse<kValidatingFlags>(body.data(), body.size());
  }
  if (!doc->HasParseError()) return CheckKeysUnique(*doc, "body");
  return BadRequest(std::string("request body is not valid JSON: ") +
                    rapidjson::GetParseError_En(doc->GetParseError()) + " (at byte " +
                    std::to_string(doc->GetErrorOffset()) + ")");
}

Status ValidationFailedStatus(std::vector<FieldError> errors) {
  std::string message;
  for (const auto& part : errors.front().loc) {
    if (!message.empty()) message += '.';
    message += part;
  }
  message += ": " + errors.front().msg;
  if (errors.size() > 1) {
    size_t more = errors.size() - 1;
    message += " (and " + std::to_string(more) + (more == 1 ? " more error)" : " more errors)");
  }
  return Status(ErrorCode::kValidationFailed, std::move(message),
                ValidationDetails{std::move(errors)});
}

void Report(std::vector<FieldError>* errors, FieldError error) {
  if (errors->size() < kMaxFieldErrors) errors->push_back(std::move(error));
}

int64_t Utf8Length(std::string_view text) {
  int64_t n = 0;
  for (char c : text) {
    if ((static_cast<unsigned char>(c) & 0xC0) != 0x80) ++n;
  }
  return n;
}

std::string FormatNumber(double value) {
  if (std::isfinite(value) && std::floor(value) == value && std::fabs(value) < 1e15) {
    return std::to_string(static_cast<int64_t>(value));
  }
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.15g", value);
  return buf;
}

}  // namespace dnaserve::core
