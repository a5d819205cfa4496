#include "runner/workflows/variant_score_batch.h"

#include <rapidjson/document.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <algorithm>
#include <map>
#include <set>
#include <utility>
#include <vector>

#include "common/digest.h"
#include "common/log.h"
#include "runner/vcf/bgzip_text.h"
#include "runner/workflows/variant_score_response.h"

namespace dnaserve::runner {
namespace {

using rapidjson::Value;

// The last field of every annotation (bcftools 1.16's +split-vep wants one): the Sequence
// Ontology's root term, as no scorer classifies the variant.
constexpr const char* kConsequence = "sequence_variant";

// The reference checks over the whole job, so a duplicate names its first occurrence anywhere
// in it; each variant carries its problem and the reference's names into its chunk, where the
// checks keep them.
std::vector<core::RequestedVariant> CheckWholeJob(const std::vector<core::RequestedVariant>& in,
                                                  const ReferenceLookup& references) {
  std::vector<ScoredVariant> checked = CheckVariants(in, references);
  std::vector<core::RequestedVariant> out;
  out.reserve(checked.size());
  for (ScoredVariant& s : checked) {
    s.variant.problem = s.problem;
    out.push_back(std::move(s.variant));
  }
  return out;
}

// One chunk scored by the sync path and rendered as a sync answer (its indexes chunk-relative).
StatusOr<std::string> ScoreChunk(const core::AdmittedVariantScore& without_variants,
                                 std::vector<core::RequestedVariant> variants,
                                 const ScoringServices& scoring, const core::JobContext& context) {
  core::AdmittedVariantScore chunk = without_variants;
  chunk.input.variants = std::move(variants);
  auto result = ScoreVariants(chunk, scoring, context);
  if (!result.ok()) return result.status();
  return RenderVariantScoreJson(chunk.input, *result, std::string(core::kDefaultScoreAssembly),
                                {context.call.job_id, context.call.request_id});
}

// Progress of chunk `n` of `chunks`, passed up as the job's.
core::JobContext ChunkContext(const core::JobContext& job, int64_t n, int64_t chunks) {
  core::JobContext context = job;
  context.report_progress = [job, n, chunks](double percent, const std::string& message) {
    const double done = (static_cast<double>(n) + percent / 100.0) / static_cast<double>(chunks);
    job.Progress(95.0 * done, "chunk " + std::to_string(n + 1) + " of " +
                                  std::to_string(chunks) + ": " + message);
  };
  return context;
}

// The stored checkpoint of chunk `n`, or the chunk scored now and stored.
StatusOr<std::string> ChunkText(const core::AdmittedVariantScore& without_variants,
                                const std::vector<core::RequestedVariant>& checked, int64_t n,
                                int64_t chunks, const BatchScoringServices& services,
                                const core::JobContext& context) {
  const std::string& job_id = context.call.job_id;
  auto stored = services.store->GetFile(job_id, BatchChunkFile(n));
  if (stored.ok()) {
    log::Info("variant_batch_chunk_resumed", {{"job_id", job_id}, {"chunk", n}});
    return stored;
  }
  const size_t from = static_cast<size_t>(n * kBatchChunkVariants);
  const size_t to = std::min(checked.size(), from + static_cast<size_t>(kBatchChunkVariants));
  std::vector<core::RequestedVariant> variants(checked.begin() + static_cast<ptrdiff_t>(from),
                                               checked.begin() + static_cast<ptrdiff_t>(to));
  auto text = ScoreChunk(without_variants, std::move(variants), services.scoring,
                         ChunkContext(context, n, chunks));
  if (!text.ok()) return text.status();
  // A lost checkpoint costs only a re-score after a crash: the job goes on.
  Status put = services.store->PutFile(job_id, BatchChunkFile(n), *text);
  if (!put.ok()) {
    log::Warn("variant_batch_checkpoint_failed",
              {{"job_id", job_id}, {"chunk", n}, {"error", put.message()}});
  }
  return text;
}

// ---- the annotated VCF

// An INFO value's text: VCF 4.3's percent-encoding of what would end or split it, and '|'
// (the annotation separator).
std::string InfoText(std::string_view text) {
  static const char* kHex = "0123456789ABCDEF";
  std::string out;
  for (char c : text) {
    const auto u = static_cast<unsigned char>(c);
    if (c == '%' || c == ';' || c == '=' || c == ',' || c == '|' || c == ' ' || u < 0x20 ||
        u >= 0x7f) {
      out += '%';
      out += kHex[u >> 4];
      out += kHex[u & 15];
    } else {
      out += c;
    }
  }
  return out;
}

// A JSON scalar as the summary writes it (numbers in the shortest form that reads back).
std::string ScalarText(const Value& v) {
  if (v.IsString()) return InfoText(std::string_view(v.GetString(), v.GetStringLength()));
  rapidjson::StringBuffer buffer;
  rapidjson::Writer<rapidjson::StringBuffer> writer(buffer);
  v.Accept(writer);
  return buffer.GetString();
}

std::string Field(const Value& object, const char* name) {
  auto it = object.FindMember(name);
  return it == object.MemberEnd() ? std::string() : ScalarText(it->value);
}

std::string Joined(const std::vector<std::string>& parts, char separator) {
  std::string out;
  for (size_t i = 0; i < parts.size(); ++i) {
    if (i) out += separator;
    out += parts[i];
  }
  return out;
}

// A variant whose columns make a VCF record: a contig and a position, alleles without what
// would break the line.
bool WritableAsRecord(const core::RequestedVariant& v) {
  auto clean = [](const std::string& s) {
    return !s.empty() && s.find_first_of(" \t\r\n,;") == std::string::npos;
  };
  return clean(v.contig) && v.position >= 1 && clean(v.ref) && clean(v.alt) &&
         v.contig.find_first_of("<>=") == std::string::npos;
}

std::string SpliceInfo(const std::string& allele, const Value& splice) {
  std::vector<std::string> parts = {allele};
  for (const char* f : {"strand", "DS_AG", "DS_AL", "DS_DG", "DS_DL", "DP_AG", "DP_AL", "DP_DG",
                        "DP_DL", "DS_max"}) {
    parts.push_back(Field(splice, f));
  }
  parts.emplace_back(kConsequence);
  return Joined(parts, '|');
}

std::string ExpressionInfo(const std::string& allele, const Value& genes) {
  std::vector<std::string> entries;
  for (const Value& gene : genes.GetArray()) {
    for (const Value& context : gene["contexts"].GetArray()) {
      entries.push_back(Joined({allele, Field(gene, "gene_symbol"), Field(gene, "gene_id"),
                                Field(gene, "transcript_id"), Field(gene, "tss_distance"),
                                Field(context, "context"), Field(context, "ref_log_tpm"),
                                Field(context, "alt_log_tpm"), Field(context, "log2_fold_change"),
                                kConsequence},
                               '|'));
    }
  }
  return Joined(entries, ',');
}

std::string ChromatinInfo(const std::string& allele, const Value& features) {
  std::vector<std::string> entries;
  for (const Value& f : features.GetArray()) {
    entries.push_back(Joined({allele, Field(f, "index"), Field(f, "name"), Field(f, "category"),
                              Field(f, "ref"), Field(f, "alt"), Field(f, "delta"), kConsequence},
                             '|'));
  }
  return Joined(entries, ',');
}

std::string PromoterInfo(const std::string& allele, const Value& p) {
  return Joined({allele, Field(p, "ref"), Field(p, "alt"), Field(p, "delta"),
                 Field(p, "ref_offset"), Field(p, "alt_offset"), Field(p, "windows"), kConsequence},
                '|');
}

std::string RecordInfo(const std::string& allele, const Value& result) {
  std::vector<std::string> fields;
  if (result.HasMember("error")) {
    fields.push_back("DNASERVE_ERROR=" + Field(result["error"], "code"));
  }
  if (result.HasMember("splice")) {
    fields.push_back("DNASERVE_SPLICE=" + SpliceInfo(allele, result["splice"]));
  }
  if (result.HasMember("expression") && !result["expression"].Empty()) {
    fields.push_back("DNASERVE_EXPRESSION=" + ExpressionInfo(allele, result["expression"]));
  }
  if (result.HasMember("chromatin") && !result["chromatin"].Empty()) {
    fields.push_back("DNASERVE_CHROMATIN=" + ChromatinInfo(allele, result["chromatin"]));
  }
  if (result.HasMember("promoter")) {
    fields.push_back("DNASERVE_PROMOTER=" + PromoterInfo(allele, result["promoter"]));
  }
  return fields.empty() ? "." : Joined(fields, ';');
}

std::string InfoHeader(const char* id, const std::string& what, const char* format) {
  return "##INFO=<ID=" + std::string(id) + ",Number=.,Type=String,Description=\"" + what +
         " Values percent-encoded as VCF 4.3 says. Format: " + format + "|Consequence\">\n";
}

// The header: the scorers' models, one INFO line per scorer asked for, the contigs met.
// Nothing of the run (job id, time) is written: the same variants and models give the same
// bytes, whichever job or runner scored them.
std::string VcfHeader(const Value& scorers, const std::vector<std::string>& contigs) {
  std::string h = "##fileformat=VCFv4.2\n##source=dnaserve variant_score\n";
  h += "##dnaserve_assembly=" + std::string(core::kDefaultScoreAssembly) + "\n";
  for (const std::string& contig : contigs) h += "##contig=<ID=" + contig + ">\n";
  for (auto s = scorers.MemberBegin(); s != scorers.MemberEnd(); ++s) {
    h += "##dnaserve_scorer=<ID=" + std::string(s->name.GetString()) +
         ",Model=" + Field(s->value, "model") +
         ",PackageDigest=" + Field(s->value, "package_digest") + ">\n";
  }
  auto model = [&](const char* scorer) {
    const Value& s = scorers[scorer];
    return " by model " + Field(s, "model") + " (" + Field(s, "package_digest") + ").";
  };
  if (scorers.HasMember("splice")) {
    h += InfoHeader("DNASERVE_SPLICE",
                    "SpliceAI-style splice delta scores (DS: largest REF/ALT difference within "
                    "the distance; DP: its offset from the variant), of the strand with the "
                    "larger delta," + model("splice"),
                    "ALLELE|STRAND|DS_AG|DS_AL|DS_DG|DS_DL|DP_AG|DP_AL|DP_DG|DP_DL|DS_MAX");
  }
  if (scorers.HasMember("expression")) {
    h += InfoHeader("DNASERVE_EXPRESSION",
                    "Expression change per gene with a start site in the window and per context "
                    "(log TPM+1 of REF and ALT, log2 fold change)," + model("expression"),
                    "ALLELE|GENE_SYMBOL|GENE_ID|TRANSCRIPT_ID|TSS_DISTANCE|CONTEXT|REF_LOG_TPM|"
                    "ALT_LOG_TPM|LOG2FC");
  }
  if (scorers.HasMember("chromatin")) {
    h += InfoHeader("DNASERVE_CHROMATIN",
                    "Chromatin features with the largest |ALT - REF| in the window centred on "
                    "the variant," + model("chromatin"),
                    "ALLELE|INDEX|FEATURE|CATEGORY|REF|ALT|DELTA");
  }
  if (scorers.HasMember("promoter")) {
    h += InfoHeader("DNASERVE_PROMOTER",
                    "Largest promoter window score of REF and of ALT near the variant and their "
                    "difference," + model("promoter"),
                    "ALLELE|REF|ALT|DELTA|REF_OFFSET|ALT_OFFSET|WINDOWS");
  }
  h += "##INFO=<ID=DNASERVE_ERROR,Number=1,Type=String,Description=\"Why the variant was not "
       "scored: the error code of its result in the job's JSON summary\">\n";
  h += "#CHROM\tPOS\tID\tREF\tALT\tQUAL\tFILTER\tINFO\n";
  return h;
}

std::string VcfText(const std::vector<core::RequestedVariant>& sent, const Value& results,
                    const Value& scorers) {
  std::vector<std::string> contigs;
  std::set<std::string> seen;
  std::string body;
  for (rapidjson::SizeType i = 0; i < results.Size(); ++i) {
    const core::RequestedVariant& v = sent[i];
    if (!WritableAsRecord(v)) continue;
    if (seen.insert(v.contig).second) contigs.push_back(v.contig);
    body += v.contig + "\t" + std::to_string(v.position) + "\t.\t" + v.ref + "\t" + v.alt +
            "\t.\t.\t" + RecordInfo(InfoText(v.alt), results[i]) + "\n";
  }
  return VcfHeader(scorers, contigs) + body;
}

// What the chunks' metas add up to: the worker calls made for the job, by whichever runner
// scored each chunk (read from the checkpoints, so a resumed job reports the same).
struct ChunkCalls {
  std::string model, package_digest;  // the first scorer's, as a sync answer names it
  bool cold_start = false;
  int64_t model_load_time_ms = 0;
  int64_t inference_time_ms = 0;
  int64_t model_calls = 0;

  void Add(const Value& meta) {
    if (!meta.IsObject()) return;
    auto integer = [&meta](const char* name) {
      auto it = meta.FindMember(name);
      return it != meta.MemberEnd() && it->value.IsInt64() ? it->value.GetInt64() : 0;
    };
    auto text = [&meta](const char* name) {
      auto it = meta.FindMember(name);
      return it != meta.MemberEnd() && it->value.IsString() ? std::string(it->value.GetString())
                                                             : std::string();
    };
    if (model.empty()) {
      model = text("model");
      package_digest = text("package_digest");
    }
    auto cold = meta.FindMember("cold_start");
    cold_start = cold_start || (cold != meta.MemberEnd() && cold->value.IsTrue());
    model_load_time_ms += integer("model_load_time_ms");
    inference_time_ms += integer("inference_time_ms");
    model_calls += integer("model_calls");
  }
};

// The chunks' results as one array in request order (indexes made job-wide), and the scorers
// (the same in every chunk: the models were resolved at admission).
Status MergeChunks(const std::vector<std::string>& texts, rapidjson::Document* merged,
                   Value* scorers, ChunkCalls* calls) {
  auto& alloc = merged->GetAllocator();
  merged->SetArray();
  for (size_t n = 0; n < texts.size(); ++n) {
    rapidjson::Document chunk(&alloc);
    chunk.Parse(texts[n].c_str(), texts[n].size());
    if (chunk.HasParseError() || !chunk.IsObject() || !chunk.HasMember("data") ||
        !chunk["data"].HasMember("results")) {
      return Internal("checkpoint " + BatchChunkFile(static_cast<int64_t>(n)) +
                      " of this job is not a scored chunk");
    }
    Value& data = chunk["data"];
    if (n == 0) scorers->CopyFrom(data["scorers"], alloc);
    if (chunk.HasMember("meta")) calls->Add(chunk["meta"]);
    for (Value& r : data["results"].GetArray()) {
      r["index"].SetInt64(static_cast<int64_t>(merged->Size()));
      merged->PushBack(r.Move(), alloc);  // same allocator: no copy
    }
  }
  return Status::Ok();
}

// ---- the JSON summary

template <typename Writer>
void WriteSummary(Writer& w, const Value& scorers, Value& results, int64_t chunks,
                  const ChunkCalls& calls, const std::string& vcf,
                  const core::JobContext& context) {
  std::map<std::string, int64_t> errors_by_code;
  for (const Value& r : results.GetArray()) {
    if (r.HasMember("error")) ++errors_by_code[r["error"]["code"].GetString()];
  }
  int64_t errors = 0;
  for (const auto& [code, n] : errors_by_code) errors += n;
  const auto total = static_cast<int64_t>(results.Size());
  w.StartObject();
  w.Key("data");
  w.StartObject();
  w.Key("task");
  w.String(core::kVariantScoreTask.data(),
           static_cast<rapidjson::SizeType>(core::kVariantScoreTask.size()));
  w.Key("assembly");
  w.String(core::kDefaultScoreAssembly.data(),
           static_cast<rapidjson::SizeType>(core::kDefaultScoreAssembly.size()));
  w.Key("scorers");
  scorers.Accept(w);
  w.Key("counts");
  w.StartObject();
  w.Key("variants");
  w.Int64(total);
  w.Key("scored");
  w.Int64(total - errors);
  w.Key("errors");
  w.Int64(errors);
  w.EndObject();
  w.Key("errors_by_code");
  w.StartObject();
  for (const auto& [code, n] : errors_by_code) {
    w.Key(code.c_str());
    w.Int64(n);
  }
  w.EndObject();
  w.Key("files");
  w.StartArray();
  w.StartObject();
  w.Key("name");
  w.String(kAnnotatedVcfFile);
  w.Key("media_type");
  w.String("application/gzip");
  w.Key("path");
  w.String(("/v1/tasks/jobs/" + context.call.job_id + "/files/" + kAnnotatedVcfFile).c_str());
  w.Key("bytes");
  w.Int64(static_cast<int64_t>(vcf.size()));
  w.Key("sha256");
  w.String(HexDigest(DigestAlgorithm::kSha256, vcf).c_str());
  w.EndObject();
  w.EndArray();
  w.Key("results");
  results.Accept(w);
  w.EndObject();
  w.Key("meta");
  w.StartObject();
  w.Key("job_id");
  w.String(context.call.job_id.c_str());
  w.Key("request_id");
  w.String(context.call.request_id.c_str());
  w.Key("task");
  w.String(core::kVariantScoreTask.data(),
           static_cast<rapidjson::SizeType>(core::kVariantScoreTask.size()));
  w.Key("model");
  w.String(calls.model.c_str());
  w.Key("package_digest");
  w.String(calls.package_digest.c_str());
  w.Key("cold_start");
  w.Bool(calls.cold_start);
  w.Key("model_load_time_ms");
  w.Int64(calls.model_load_time_ms);
  w.Key("inference_time_ms");
  w.Int64(calls.inference_time_ms);
  w.Key("model_calls");
  w.Int64(calls.model_calls);
  w.Key("batch");
  w.Bool(true);
  w.Key("chunks");
  w.Int64(chunks);
  w.Key("chunk_variants");
  w.Int64(kBatchChunkVariants);
  w.EndObject();
  w.EndObject();
}

}  // namespace

std::string BatchChunkFile(int64_t n) { return "chunk-" + std::to_string(n); }

StatusOr<core::JobOutput> RunVariantScoreBatch(const core::AdmittedVariantScore& admitted,
                                               const BatchScoringServices& services,
                                               const core::JobContext& context) {
  const std::vector<core::RequestedVariant>& sent = admitted.input.variants;
  const std::vector<core::RequestedVariant> checked =
      CheckWholeJob(sent, *services.scoring.references);
  core::AdmittedVariantScore without_variants = admitted;
  without_variants.input.variants.clear();
  const auto total = static_cast<int64_t>(checked.size());
  const int64_t chunks = (total + kBatchChunkVariants - 1) / kBatchChunkVariants;
  std::vector<std::string> texts;
  texts.reserve(static_cast<size_t>(chunks));
  for (int64_t n = 0; n < chunks; ++n) {
    if (context.Cancelled()) return Cancelled("the job was cancelled");
    auto text = ChunkText(without_variants, checked, n, chunks, services, context);
    if (!text.ok()) return text.status();
    texts.push_back(std::move(text).value());
  }
  context.Progress(95, "writing the annotated VCF");
  rapidjson::Document results;
  Value scorers(rapidjson::kObjectType);
  ChunkCalls calls;
  DNASERVE_RETURN_IF_ERROR(MergeChunks(texts, &results, &scorers, &calls));
  texts.clear();
  if (static_cast<int64_t>(results.Size()) != total) {
    return Internal("the checkpoints of this job hold " + std::to_string(results.Size()) +
                    " results for " + std::to_string(total) + " variants");
  }
  auto vcf = variant::BgzipText(VcfText(sent, results, scorers),
                                services.scratch_dir);
  if (!vcf.ok()) return vcf.status();
  DNASERVE_RETURN_IF_ERROR(
      services.store->PutFile(context.call.job_id, kAnnotatedVcfFile, *vcf));
  rapidjson::StringBuffer buffer;
  rapidjson::Writer<rapidjson::StringBuffer> writer(buffer);
  WriteSummary(writer, scorers, results, chunks, calls, *vcf, context);
  core::JobOutput output;
  output.body.assign(buffer.GetString(), buffer.GetSize());
  return output;
}

}  // namespace dnaserve::runner
