#include "core/validation/find_genes_request.h"

#include <rapidjson/document.h>

#include <vector>

#include "core/validation/json_walk.h"
#include "core/validation/predict_request.h"
#include "core/validation/request_schema.h"

namespace dnaserve::core {

StatusOr<ValidatedFindGenes> ValidateFindGenesBody(std::string_view body) {
  rapidjson::Document doc;
  DNASERVE_RETURN_IF_ERROR(ParseJsonBody(body, &doc));

  const ObjectSpec& schema = FindGenesRequestSchema();
  std::vector<FieldError> errors;
  CheckedObject checked;
  CheckObject(schema, doc, {"body"}, &errors, &checked);

  ValidatedFindGenes out;
  if (const std::string* bases = checked.String("sequence")) {
    out.sequence = *bases;
    out.sequence_length = static_cast<int64_t>(bases->size());
  }
  const std::string* name = checked.String("sequence_name");
  out.sequence_name = name ? *name : DefaultString(*schema.Find("sequence_name"));
  if (doc.IsObject()) out.interval = ReadInterval(checked, kFindGenesMinSequenceBp, &errors);
  if (out.interval) {
    if (checked.Has("sequence_name")) {
      Report(&errors, FieldError{{"body", "sequence_name"},
                                 "sequence_name is not used with interval: outputs are named by "
                                 "the interval's contig",
                                 "value_error"});
    }
    out.sequence_name = out.interval->contig;
    out.sequence_length = out.interval->length();
  }

  const CheckedObject no_options;  // options missing: its own error is already reported
  const CheckedObject* given = checked.Object("options");
  const CheckedObject& options = given ? *given : no_options;
  if (const std::string* description = options.String("description")) {
    out.description = *description;
  }
  if (const std::string* model = options.String("annotation_model")) out.annotation_model = *model;
  if (const std::string* model = options.String("expression_model")) out.expression_model = *model;
  auto batch = options.Integer("batch_size");
  out.annotation.set_batch_size(static_cast<int32_t>(
      batch ? *batch : DefaultInteger(*FindGenesOptionsSchema().Find("batch_size"))));
  out.annotation.set_reverse_complement(true);
  if (out.interval && options.String("shift_coordinates") != nullptr) {
    Report(&errors, IntervalShiftError());
  }
  ApplyShiftCoordinates(out.interval ? nullptr : options.String("shift_coordinates"),
                        out.sequence_name, checked.Failed("sequence_name"), &errors,
                        &out.annotation);

  if (!errors.empty()) return ValidationFailedStatus(std::move(errors));
  return out;
}

}  // namespace dnaserve::core
