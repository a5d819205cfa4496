#include "common/task.h"

namespace dnaserve {

std::string_view TaskName(Task task) {
  switch (task) {
    case Task::kPromoter: return "promoter";
    case Task::kSplice: return "splice";
    case Task::kEnhancer: return "enhancer";
    case Task::kChromatin: return "chromatin";
    case Task::kAnnotation: return "annotation";
    case Task::kExpression: return "expression";
  }
  return "promoter";
}

std::optional<Task> TaskFromName(std::string_view name) {
  for (Task task : kAllTasks) {
    if (TaskName(task) == name) return task;
  }
  return std::nullopt;
}

std::string_view FormatName(OutputFormat format) {
  switch (format) {
    case OutputFormat::kJson: return "json";
    case OutputFormat::kBed: return "bed";
    case OutputFormat::kBedGraph: return "bedgraph";
    case OutputFormat::kGff3: return "gff3";
  }
  return "json";
}

std::optional<OutputFormat> FormatFromName(std::string_view name) {
  for (OutputFormat f : {OutputFormat::kJson, OutputFormat::kBed, OutputFormat::kBedGraph,
                         OutputFormat::kGff3}) {
    if (FormatName(f) == name) return f;
  }
  return std::nullopt;
}

std::string_view FormatMediaType(OutputFormat format) {
  switch (format) {
    case OutputFormat::kJson: return "application/json";
    case OutputFormat::kBed: return "text/x-bed";
    case OutputFormat::kBedGraph: return "text/x-bedgraph";
    case OutputFormat::kGff3: return "text/x-gff3";
  }
  return "application/json";
}

int64_t MinSequenceBp(Task task) {
  switch (task) {
    case Task::kPromoter: return 300;
    case Task::kSplice: return 100;
    case Task::kEnhancer: return 50;
    case Task::kChromatin: return 200;
    case Task::kAnnotation: return 1000;
    case Task::kExpression: return kExpressionWindowBp;
  }
  return 1;
}

const std::vector<OutputFormat>& SupportedFormats(Task task) {
  using F = OutputFormat;
  static const std::vector<F> promoter = {F::kJson, F::kBed, F::kBedGraph};
  static const std::vector<F> splice = {F::kJson, F::kBed, F::kGff3};
  static const std::vector<F> enhancer = {F::kJson, F::kBedGraph};
  static const std::vector<F> chromatin = {F::kJson, F::kBed};
  static const std::vector<F> annotation = {F::kJson, F::kBed, F::kGff3};
  static const std::vector<F> expression = {F::kJson};
  switch (task) {
    case Task::kPromoter: return promoter;
    case Task::kSplice: return splice;
    case Task::kEnhancer: return enhancer;
    case Task::kChromatin: return chromatin;
    case Task::kAnnotation: return annotation;
    case Task::kExpression: return expression;
  }
  return expression;
}

}  // namespace dnaserve
