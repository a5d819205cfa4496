#include "runner/workflows/ism.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <future>
#include <map>
#include <mutex>
#include <thread>
#include <utility>

#include "common/sequence.h"
#include "common/task.h"
#include "core/render/json_writer.h"
#include "core/validation/ism_request.h"
#include "core/validation/variant_request.h"
#include "runner/genome/reference_genome.h"
#include "runner/workflows/interval_job.h"
#include "runner/workflows/ism_expression.h"
#include "runner/workflows/variant_score_response.h"
#include "runner/workflows/variant_scoring.h"

namespace dnaserve::runner {
namespace {

namespace wv1 = worker::v1;

// The assembly and contig name the context is held under while its SNVs are scored.
constexpr const char* kContextName = "context";
constexpr char kBases[] = {'A', 'C', 'G', 'T'};

// The context as a one-contig reference the variant scorers read: a plain FASTA and its .fai in
// a private temporary directory, opened and then removed (the open handle keeps the data), so
// nothing is left behind whatever the job does next.
StatusOr<std::unique_ptr<variant::ReferenceGenome>> ContextGenome(const std::string& bases) {
  const char* tmp = std::getenv("TMPDIR");
  std::string dir = std::string(tmp != nullptr && *tmp != '\0' ? tmp : "/tmp") +
                    "/dnaserve-ism-XXXXXX";
  if (mkdtemp(dir.data()) == nullptr) {
    return Internal("cannot create a temporary directory for the ISM context in " + dir);
  }
  const std::string fasta = dir + "/context.fa";
  bool written = false;
  {
    std::ofstream out(fasta, std::ios::binary);
    out << '>' << kContextName << '\n' << bases << '\n';
    std::ofstream fai(fasta + ".fai", std::ios::binary);
    // name, length, offset of the first base, bases per line, bytes per line
    fai << kContextName << '\t' << bases.size() << '\t' << std::strlen(kContextName) + 2 << '\t'
        << bases.size() << '\t' << bases.size() + 1 << '\n';
    out.flush();
    fai.flush();
    written = out.good() && fai.good();
  }
  StatusOr<std::unique_ptr<variant::ReferenceGenome>> genome =
      written ? variant::ReferenceGenome::Open(fasta)
              : StatusOr<std::unique_ptr<variant::ReferenceGenome>>(
                    Internal("cannot write the ISM context to " + fasta));
  std::remove((fasta + ".fai").c_str());
  std::remove(fasta.c_str());
  rmdir(dir.c_str());
  return genome;
}

class ContextReference : public ReferenceLookup {
 public:
  explicit ContextReference(const variant::ReferenceGenome* genome) : genome_(genome) {}
  const variant::ReferenceGenome* Find(const std::string& assembly) const override {
    return assembly == kContextName ? genome_ : nullptr;
  }
  std::vector<std::string> Names() const override { return {kContextName}; }

 private:
  const variant::ReferenceGenome* genome_;
};

// What the worker calls of a whole ISM cost, each distinct call counted once.
struct IsmCallTotals {
  std::mutex mu;
  bool cold_start = false;
  int64_t model_load_time_ms = 0;
  int64_t inference_time_ms = 0;
  int64_t calls = 0;
};

// One position's worker calls: a call identical to one already made (the REF windows the
// position's three ALTs share) is answered with that call's result, or waits for it while it
// runs. Per position, so what is kept is one position's results, never the whole window's.
class IsmCallCache : public core::InferenceBackend {
 public:
  IsmCallCache(core::InferenceBackend* inner, IsmCallTotals* totals)
      : inner_(inner), totals_(totals) {}

  StatusOr<wv1::PredictResult> Predict(Task task, const wv1::PredictRequest& request,
                                       const core::CallContext& context,
                                       const core::ProgressCallback& on_progress) override {
    (void)on_progress;
    const std::string key = std::string(TaskName(task)) + '\n' + request.SerializeAsString();
    std::promise<StatusOr<wv1::PredictResult>> promise;
    std::shared_future<StatusOr<wv1::PredictResult>> answer;
    bool mine = false;
    {
      std::lock_guard<std::mutex> lock(mu_);
      auto it = calls_.find(key);
      if (it == calls_.end()) {
        answer = promise.get_future().share();
        calls_.emplace(key, answer);
        mine = true;
      } else {
        answer = it->second;
      }
    }
    if (mine) {
      StatusOr<wv1::PredictResult> result = inner_->Predict(task, request, context, nullptr);
      {
        std::lock_guard<std::mutex> lock(totals_->mu);
        ++totals_->calls;
        if (result.ok()) {
          if (result->cold_start()) {
            totals_->cold_start = true;
            totals_->model_load_time_ms += result->model_load_time_ms();
          }
          totals_->inference_time_ms += result->inference_time_ms();
        }
      }
      promise.set_value(std::move(result));
    }
    return answer.get();
  }

  StatusOr<std::vector<wv1::ModelInfo>> ListModels(Task task) override {
    return inner_->ListModels(task);
  }

 private:
  core::InferenceBackend* inner_;
  IsmCallTotals* totals_;
  std::mutex mu_;
  std::map<std::string, std::shared_future<StatusOr<wv1::PredictResult>>> calls_;
};

// The published cell of one scored SNV: the number POST /v1/variants/score reports for it.
StatusOr<IsmCell> CellOf(const std::string& scorer, const ScoredVariant& scored) {
  IsmCell cell;
  cell.alt = scored.variant.alt[0];
  if (scorer == "splice" && scored.splice_plus && scored.splice_minus) {
    // The strand variant scoring reports (compared after rounding) and its DS_max.
    const bool use_minus =
        RoundScore(scored.splice_minus->Max()) > RoundScore(scored.splice_plus->Max());
    cell.delta = RoundScore((use_minus ? *scored.splice_minus : *scored.splice_plus).Max());
    return cell;
  }
  if (scorer == "chromatin" && scored.chromatin && !scored.chromatin->empty()) {
    const ChromatinDelta& top = scored.chromatin->front();
    cell.delta = RoundScore(top.alt - top.ref);
    cell.feature = top.name;
    return cell;
  }
  if (scorer == "promoter" && scored.promoter) {
    cell.delta = RoundScore(scored.promoter->alt - scored.promoter->ref);
    return cell;
  }
  return Internal("the " + scorer + " scorer returned no score for " + scored.variant.input);
}

// The scorer's model as its first scored SNV named it.
void TakeModel(const std::string& scorer, const VariantScoreResult& scored, IsmResult* out) {
  if (scorer == "splice" && scored.splice) {
    out->model = scored.splice->model;
    out->package_digest = scored.splice->package_digest;
  } else if (scorer == "chromatin" && scored.chromatin) {
    out->model = scored.chromatin->model.model;
    out->package_digest = scored.chromatin->model.package_digest;
    out->window_bp = scored.chromatin->model.window_bp;
  } else if (scorer == "promoter" && scored.promoter) {
    out->model = scored.promoter->model.model;
    out->package_digest = scored.promoter->model.package_digest;
    out->window_bp = scored.promoter->model.window_bp;
  }
}

// The three SNVs of one position, scored one after the other through one IsmCallCache (the
// second and third find their REF windows there). `ref` and the ALTs are plus-strand bases;
// `offset` is the position's place in the context the model sees, which on a reversed context
// holds their complements.
Status ScorePosition(const core::AdmittedIsm& admitted, int64_t offset, char ref, bool reversed,
                     const ScoringServices& base, IsmCallTotals* totals,
                     const core::JobContext& context, IsmPosition* out,
                     VariantScoreResult* first) {
  IsmCallCache cache(base.backend, totals);
  ScoringServices services = base;
  services.backend = &cache;
  const auto seen = [reversed](char b) {
    return reversed ? ReverseComplement(std::string_view(&b, 1))[0] : b;
  };
  for (char alt : kBases) {
    if (alt == ref) continue;
    core::AdmittedVariantScore one = admitted.scorer;
    core::RequestedVariant v;
    v.assembly = kContextName;
    v.contig = kContextName;
    v.position = offset + 1;
    v.ref = std::string(1, seen(ref));
    v.alt = std::string(1, seen(alt));
    v.input = std::string(kContextName) + ":" + std::to_string(v.position) + ":" + v.ref + ":" +
              v.alt;
    one.input.variants = {v};
    auto scored = ScoreVariants(one, services, context);
    if (!scored.ok()) return scored.status();
    if (scored->variants.size() != 1) return Internal("ISM: one variant scored as several");
    const ScoredVariant& s = scored->variants.front();
    if (s.problem) {
      return Internal("ISM: the SNV " + v.input + " was refused: " + s.problem->message);
    }
    auto cell = CellOf(admitted.input.scorer, s);
    if (!cell.ok()) return cell.status();
    cell->alt = alt;  // reported on the plus strand, whichever strand was scored
    out->cells.push_back(std::move(cell).value());
    if (first != nullptr && first->variants.empty()) *first = std::move(scored).value();
  }
  return Status::Ok();
}

}  // namespace

StatusOr<IsmResult> ScoreIsm(const core::AdmittedIsm& admitted, const std::string& context_bases,
                             int64_t context_start, core::InferenceBackend& backend,
                             const core::ModelCatalogue& catalogue,
                             const core::JobContext& context) {
  const core::ValidatedIsm& in = admitted.input;
  const int64_t from = core::WindowOffset(in, context_start);
  const int64_t length = in.window_end - in.window_start + 1;
  if (from < 0 || length < 1 || from + length > static_cast<int64_t>(context_bases.size())) {
    return Internal("ISM: the window does not lie inside its context");
  }
  // Strand '-': the model sees the reverse complement; positions and bases stay plus-strand.
  const bool reversed = in.interval && in.interval->strand == '-';
  const int64_t context_length = static_cast<int64_t>(context_bases.size());
  auto genome = ContextGenome(reversed ? ReverseComplement(context_bases) : context_bases);
  if (!genome.ok()) return genome.status();
  const ContextReference lookup(genome->get());
  const ScoringServices services{&lookup, &catalogue, &backend, nullptr, nullptr, 1};

  IsmResult result;
  result.scorer = in.scorer;
  result.context_length = static_cast<int64_t>(context_bases.size());
  result.positions.resize(static_cast<size_t>(length));
  IsmCallTotals totals;
  VariantScoreResult first;

  // The inner calls see a stop flag of their own (set on the job's cancellation or the first
  // failure) and no progress callback: progress is the window's, reported here.
  std::atomic<bool> stop{false};
  core::JobContext inner;
  inner.call = context.call;
  inner.call.cancelled = &stop;
  std::atomic<int64_t> next{0};
  std::atomic<int64_t> done{0};
  std::mutex mu;  // failure, first, progress
  Status failure;
  auto work = [&] {
    for (int64_t i = next++; i < length && !stop; i = next++) {
      if (context.Cancelled()) {
        stop = true;
        break;
      }
      IsmPosition& position = result.positions[static_cast<size_t>(i)];
      position.position = in.window_start + i;
      position.ref = context_bases[static_cast<size_t>(from + i)];
      VariantScoreResult own;
      const int64_t seen_offset = reversed ? context_length - 1 - (from + i) : from + i;
      Status status =
          ScorePosition(admitted, seen_offset, position.ref, reversed, services, &totals, inner,
                        &position, i == 0 ? &own : nullptr);
      std::lock_guard<std::mutex> lock(mu);
      if (!status.ok()) {
        if (failure.ok()) failure = status;
        stop = true;
        break;
      }
      if (i == 0) first = std::move(own);
      const int64_t finished = ++done;
      context.Progress(100.0 * static_cast<double>(finished) / static_cast<double>(length),
                       "scored " + std::to_string(finished) + " of " + std::to_string(length) +
                           " positions");
    }
  };
  const int threads = static_cast<int>(std::min<int64_t>(kIsmConcurrency, length));
  std::vector<std::thread> pool;
  for (int t = 1; t < threads; ++t) pool.emplace_back(work);
  work();
  for (std::thread& t : pool) t.join();
  if (context.Cancelled()) return Cancelled("the request was cancelled");
  if (!failure.ok()) return failure;
  TakeModel(in.scorer, first, &result);
  result.cold_start = totals.cold_start;
  result.model_load_time_ms = totals.model_load_time_ms;
  result.inference_time_ms = totals.inference_time_ms;
  result.model_calls = totals.calls;
  return result;
}

namespace {

void WriteOptions(core::JsonWriter& w, const core::ValidatedIsm& in, const IsmResult& r) {
  w.Key("options");
  w.StartObject();
  if (in.scorer == "splice") w.Field("distance", in.options.splice_distance);
  if (in.scorer == "chromatin") w.Field("top", in.options.chromatin_top);
  if (in.scorer == "promoter") w.Field("distance", in.options.promoter_distance);
  w.EndObject();
  if (r.expression) WriteIsmExpression(w, *r.expression);
  if (r.window_bp > 0) w.Field("window_bp", r.window_bp);
}

const char* ValueMeaning(const std::string& scorer) {
  if (scorer == "splice") return "DS_max";
  if (scorer == "chromatin") return "delta of the feature with the largest |ALT - REF|";
  if (scorer == "expression") {
    return "log2 fold change of the gene's predicted expression in the context, ALT vs REF: "
           "log2((TPM_alt + 1) / (TPM_ref + 1))";
  }
  return "delta of the largest window scores (ALT - REF)";
}

void WriteInterval(core::JsonWriter& w, const ResolvedInterval& resolved) {
  w.Key("interval");
  WriteIntervalEcho(w, resolved);
}

}  // namespace

std::string RenderIsmJson(const core::AdmittedIsm& admitted, const IsmResult& result,
                          const core::ResponseIds& ids) {
  const core::ValidatedIsm& in = admitted.input;
  core::JsonWriter w;
  w.StartObject();
  w.Key("data");
  w.StartObject();
  w.Field("task", core::kIsmTask);
  w.Field("scorer", result.scorer);
  w.Field("model", result.model);
  w.Field("package_digest", result.package_digest);
  WriteOptions(w, in, result);
  w.Field("value", ValueMeaning(result.scorer));
  w.Key("context");
  w.StartObject();
  w.Field("length", result.context_length);
  w.Field("coordinates", result.interval ? "contig" : "sequence");
  w.EndObject();
  w.Key("window");
  w.StartObject();
  w.Field("start", in.window_start);
  w.Field("end", in.window_end);
  w.Field("length", in.window_end - in.window_start + 1);
  w.EndObject();
  w.Key("positions");
  w.StartArray();
  for (const IsmPosition& p : result.positions) {
    w.StartObject();
    w.Field("position", p.position);
    w.Field("ref", std::string(1, p.ref));
    w.Key("alt");
    w.StartArray();
    for (const IsmCell& c : p.cells) w.String(std::string(1, c.alt));
    w.EndArray();
    w.Key("delta");
    w.StartArray();
    for (const IsmCell& c : p.cells) w.Double(c.delta);
    w.EndArray();
    if (result.scorer == "chromatin") {
      w.Key("feature");
      w.StartArray();
      for (const IsmCell& c : p.cells) w.String(c.feature);
      w.EndArray();
    }
    w.EndObject();
  }
  w.EndArray();
  w.EndObject();

  w.Key("meta");
  w.StartObject();
  w.Field("job_id", ids.job_id);
  w.Field("request_id", ids.request_id);
  w.Field("task", core::kIsmTask);
  w.Field("model", result.model);
  w.Field("package_digest", result.package_digest);
  w.Field("cold_start", result.cold_start);
  w.Field("model_load_time_ms", result.model_load_time_ms);
  w.Field("inference_time_ms", result.inference_time_ms);
  w.Field("model_calls", result.model_calls);
  if (result.interval) WriteInterval(w, *result.interval);
  w.EndObject();
  w.EndObject();
  return w.Take();
}

namespace {

class IsmJob : public core::Job {
 public:
  IsmJob(core::AdmittedIsm admitted, core::InferenceBackend* backend,
         const core::ModelCatalogue* catalogue, const VariantResources* resources)
      : admitted_(std::move(admitted)),
        backend_(backend),
        catalogue_(catalogue),
        resources_(resources) {}

  StatusOr<core::JobOutput> Run(const core::JobContext& context) override {
    const core::ValidatedIsm& in = admitted_.input;
    std::string bases = in.sequence;
    int64_t context_start = 1;
    std::optional<ResolvedInterval> resolved;
    if (in.interval) {
      auto found = ResolveInterval(*in.interval, resources_);
      if (!found.ok()) return found.status();
      // Read on the plus strand (the window's positions and REF bases are); ScoreIsm
      // reverse-complements the context for strand '-'.
      ResolvedInterval plus = *found;
      plus.interval.strand = '+';
      auto read = IntervalBases(plus, *resources_->Genome(core::kGrch37)->reference);
      if (!read.ok()) return read.status();
      bases = std::move(read).value();
      context_start = in.interval->start;
      resolved = std::move(found).value();
    }
    const int64_t length = in.window_end - in.window_start + 1;
    DNASERVE_RETURN_IF_ERROR(core::CheckWindowBases(
        bases, core::WindowOffset(in, context_start), length, in.window_start));
    auto result =
        in.scorer == "expression"
            ? ScoreIsmExpression(admitted_, bases, context_start, resolved, ExpressionSites(),
                                 *backend_, *catalogue_, context)
            : ScoreIsm(admitted_, bases, context_start, *backend_, *catalogue_, context);
    if (!result.ok()) return result.status();
    result->interval = std::move(resolved);
    core::JobOutput output;
    output.body = RenderIsmJson(admitted_, *result, {context.call.job_id, context.call.request_id});
    return output;
  }

 private:
  const variant::TssCatalogue* ExpressionSites() const {
    const GenomeAssets* grch37 = resources_ ? resources_->Genome(core::kGrch37) : nullptr;
    return grch37 ? &grch37->catalogue : nullptr;
  }

  core::AdmittedIsm admitted_;
  core::InferenceBackend* backend_;
  const core::ModelCatalogue* catalogue_;
  const VariantResources* resources_;
};

}  // namespace

StatusOr<std::unique_ptr<core::Job>> BuildIsmJob(const jobs::v1::IsmCommand& command,
                                                 core::InferenceBackend* backend,
                                                 const core::ModelCatalogue* catalogue,
                                                 const VariantResources* resources) {
  const jobs::v1::VariantScoreCommand& scorer = command.scorer();
  const int scorers = static_cast<int>(scorer.has_splice()) +
                      static_cast<int>(scorer.has_chromatin()) +
                      static_cast<int>(scorer.has_promoter()) +
                      static_cast<int>(scorer.has_expression());
  const int64_t length = command.window_end() - command.window_start() + 1;
  const int64_t context_length =
      command.has_interval() ? command.interval().end() - command.interval().start() + 1
                             : static_cast<int64_t>(command.sequence().size());
  const int64_t context_start = command.has_interval() ? command.interval().start() : 1;
  // Expression: one context, and a sequence that is the expression window.
  const bool expression_ok =
      !scorer.has_expression() ||
      (scorer.expression().contexts_size() == 1 &&
       (command.has_interval() || context_length == kExpressionWindowBp));
  if (scorers != 1 || !expression_ok || length < 1 ||
      length > core::kMaxIsmWindowBp || command.window_start() < context_start ||
      command.window_end() >= context_start + context_length) {
    return BadRequest("the queued ISM command is damaged (one scorer of splice, chromatin, "
                      "promoter, expression and a window of 1-200 bp inside its context are "
                      "required)");
  }
  return std::unique_ptr<core::Job>(
      new IsmJob(core::IsmFromCommand(command), backend, catalogue, resources));
}

}  // namespace dnaserve::runner
