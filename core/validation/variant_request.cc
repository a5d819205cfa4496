#include "core/validation/variant_request.h"

#include <rapidjson/document.h>

#include "core/validation/json_walk.h"
#include "core/validation/request_schema.h"

namespace dnaserve::core {

StatusOr<ValidatedVariant> ValidateVariantBody(std::string_view body) {
  rapidjson::Document doc;
  DNASERVE_RETURN_IF_ERROR(ParseJsonBody(body, &doc));

  std::vector<FieldError> errors;
  CheckedObject checked;
  CheckObject(VariantRequestSchema(), doc, {"body"}, &errors, &checked);
  if (!errors.empty()) return ValidationFailedStatus(std::move(errors));

  // Everything below passed the table, so every required value is present.
  ValidatedVariant out;
  const CheckedObject& input = *checked.Object("input");
  out.uri = *input.String("uri");
  if (const std::string* ref = checked.String("client_ref")) out.client_ref = *ref;

  const ObjectSpec& spec = VariantOptionsSchema();
  const CheckedObject& options = *checked.Object("options");
  out.genome_build = *options.String("genome_build");
  auto window = options.Integer("window");
  out.window = window ? *window : DefaultInteger(*spec.Find("window"));
  const std::vector<std::string>* tissues = options.Strings("tissues");
  out.tissues = tissues ? *tissues : DefaultStrings(*spec.Find("tissues"));
  if (const std::vector<std::string>* genes = options.Strings("genes")) out.genes = *genes;
  return out;
}

}  // namespace dnaserve::core
