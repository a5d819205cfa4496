#include "core/admission/interval_commands.h"

#include <utility>

#include "core/admission/commands.h"

namespace dnaserve::core {

void SetInterval(const GenomeInterval& in, jobs::v1::IntervalCommand::Interval* out) {
  out->set_assembly(in.assembly);
  out->set_contig(in.contig);
  out->set_start(in.start);
  out->set_end(in.end);
  out->set_strand(std::string(1, in.strand));
  out->set_region(in.region);
}

GenomeInterval IntervalOf(const jobs::v1::IntervalCommand::Interval& in) {
  GenomeInterval out;
  out.assembly = in.assembly();
  out.contig = in.contig();
  out.start = in.start();
  out.end = in.end();
  out.strand = in.strand() == "-" ? '-' : '+';
  out.region = in.region();
  return out;
}

jobs::v1::JobCommand IntervalCommandFor(AdmittedPredict admitted) {
  jobs::v1::JobCommand command;
  auto* interval = command.mutable_interval();
  SetInterval(*admitted.input.interval, interval->mutable_interval());
  jobs::v1::JobCommand inner = PredictCommandFor(std::move(admitted));
  *interval->mutable_predict() = std::move(*inner.mutable_predict());
  return command;
}

jobs::v1::JobCommand IntervalCommandFor(AdmittedFindGenes admitted) {
  jobs::v1::JobCommand command;
  auto* interval = command.mutable_interval();
  SetInterval(*admitted.input.interval, interval->mutable_interval());
  jobs::v1::JobCommand inner = FindGenesCommandFor(std::move(admitted));
  *interval->mutable_find_genes() = std::move(*inner.mutable_find_genes());
  return command;
}

StatusOr<std::variant<AdmittedPredict, AdmittedFindGenes>> FromIntervalCommand(
    jobs::v1::IntervalCommand command) {
  const GenomeInterval interval = IntervalOf(command.interval());
  switch (command.job_case()) {
    case jobs::v1::IntervalCommand::kPredict: {
      auto admitted = PredictFromCommand(std::move(*command.mutable_predict()));
      if (!admitted.ok()) return admitted.status();
      admitted->input.interval = interval;
      return std::variant<AdmittedPredict, AdmittedFindGenes>(std::move(admitted).value());
    }
    case jobs::v1::IntervalCommand::kFindGenes: {
      AdmittedFindGenes admitted = FindGenesFromCommand(std::move(*command.mutable_find_genes()));
      admitted.input.interval = interval;
      return std::variant<AdmittedPredict, AdmittedFindGenes>(std::move(admitted));
    }
    case jobs::v1::IntervalCommand::JOB_NOT_SET:
      break;
  }
  return BadRequest("the queued interval job carries no prediction or workflow");
}

}  // namespace dnaserve::core
