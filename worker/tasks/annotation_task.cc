// Annotation: per-base label probabilities over non-overlapping windows (plus an optional
// reverse-complement pass averaged in), decoded into transcripts with exons, introns and CDS.
#include <algorithm>

#include "worker/tasks/annotation_passes.h"
#include "worker/tasks/reply_parts.h"
#include "worker/tasks/run_support.h"
#include "worker/windowing/annotation_decode.h"
#include "worker/windowing/gene_groups.h"
#include "worker/writers/bed.h"
#include "worker/writers/gff3.h"
#include "worker/writers/text_util.h"

namespace dnaserve::worker {
namespace {

constexpr int kDefaultBatchSize = 8;
constexpr int kMaxBatchSize = 128;

// GFF3 CDS phase: bases to skip from the segment's 5' end to reach the next codon start.
std::vector<int> CdsPhases(const std::vector<Span>& cds, char strand) {
  std::vector<int> phases(cds.size(), 0);
  int64_t done = 0;
  for (size_t k = 0; k < cds.size(); ++k) {
    size_t i = strand == '+' ? k : cds.size() - 1 - k;
    phases[i] = static_cast<int>((3 - done % 3) % 3);
    done += cds[i].end - cds[i].start;
  }
  return phases;
}

Span Shifted(const Span& s, int64_t offset) { return {s.start + offset, s.end + offset}; }

void AddIntervals(const std::vector<Span>& spans, int64_t offset,
                  google::protobuf::RepeatedPtrField<v1::Interval>* out) {
  for (const Span& s : spans) {
    auto* interval = out->Add();
    interval->set_start(s.start + offset);
    interval->set_end(s.end + offset);
  }
}

}  // namespace

StatusOr<v1::PredictResult> RunAnnotation(Model& model, const ModelManifest& manifest,
                                          const Tokenizer& tokenizer,
                                          const v1::PredictRequest& request,
                                          const RunHooks& hooks) {
  const v1::AnnotationOptions options = request.has_annotation() ? request.annotation() : [] {
    v1::AnnotationOptions defaults;
    defaults.set_reverse_complement(true);
    return defaults;
  }();
  const int batch_size =
      options.batch_size() > 0 ? std::min(options.batch_size(), kMaxBatchSize) : kDefaultBatchSize;
  const int64_t offset = options.coordinate_offset();
  const std::string seqid = options.seqid().empty() ? TrackSeqid(request) : options.seqid();
  auto channels_or = ResolveAnnotationChannels(manifest.output_labels);
  if (!channels_or.ok()) return Internal(channels_or.status().message());
  const AnnotationChannels channels = *channels_or;

  const std::string& sequence = request.sequence();
  const int64_t length = static_cast<int64_t>(sequence.size());
  auto passes = RunAnnotationPasses(model, manifest, tokenizer, sequence, channels,
                                    {options.reverse_complement(), batch_size}, hooks);
  if (!passes.ok()) return passes.status();
  const PositionScores& stitched = passes->stitched;
  const std::vector<WindowTypeScores>& type_scores = passes->type_scores;

  v1::PredictResult result;
  result.set_windows_processed(passes->windows_processed);
  auto* annotation = result.mutable_annotation();
  annotation->set_windows_processed(passes->windows_processed);
  annotation->set_forward_passes(passes->forward_passes);
  std::vector<DecodedTranscript> transcripts =
      DecodeTranscripts(stitched, channels, manifest.decoder, sequence);
  std::vector<TypeCall> type_calls;  // per transcript, for the GFF3 below
  std::vector<BedRecord> bed;
  for (size_t i = 0; i < transcripts.size(); ++i) {
    DecodedTranscript& t = transcripts[i];
    const TypeCall type = AssignTranscriptType(t.span, type_scores);
    const std::string& type_name = manifest.transcript_types[type.index];
    if (type_name != "mRNA") t.cds.clear();  // only mRNAs are coding
    type_calls.push_back(type);
    const std::string id = "tx_" + std::to_string(i + 1);
    const Span span = Shifted(t.span, offset);

    auto* tx = annotation->add_transcripts();
    tx->set_id(id);
    tx->set_strand(std::string(1, t.strand));
    tx->set_start(span.start);
    tx->set_end(span.end);
    tx->set_tss_position(t.tss_position + offset);
    tx->set_polya_position(t.polya_position + offset);
    tx->set_transcript_type(type_name);
    tx->set_transcript_type_score(type.score);
    tx->set_score(t.score);
    AddIntervals(t.exons, offset, tx->mutable_exons());
    AddIntervals(t.introns, offset, tx->mutable_introns());
    AddIntervals(t.cds, offset, tx->mutable_cds());

    BedRecord record{seqid, span.start, span.end, id, BedScore(t.score), t.strand};
    record.thick_start = t.cds.empty() ? span.start : t.cds.front().start + offset;
    record.thick_end = t.cds.empty() ? span.start : t.cds.back().end + offset;
    for (const Span& e : t.exons) record.blocks.push_back(Shifted(e, offset));
    bed.push_back(std::move(record));
  }

  // GFF3: one gene per group of isoforms (exons sharing a base on one strand), each gene
  // followed by its transcripts, so a reader sees the hierarchy in order.
  const std::vector<int> gene_of = GeneOfTranscript(transcripts);
  std::vector<Gff3Feature> genes;  // by gene index: its span and score cover its transcripts
  std::vector<std::vector<size_t>> members;
  auto feature = [&](const std::string& type, const Span& s, char strand) {
    Gff3Feature f;
    f.seqid = seqid;
    f.source = manifest.id;
    f.type = type;
    f.start = s.start;
    f.end = s.end;
    f.strand = strand;
    return f;
  };
  for (size_t i = 0; i < transcripts.size(); ++i) {
    const DecodedTranscript& t = transcripts[i];
    const size_t g = static_cast<size_t>(gene_of[i]);
    const Span span = Shifted(t.span, offset);
    if (g == genes.size()) {
      genes.push_back(feature("gene", span, t.strand));
      genes.back().score = t.score;
      genes.back().attributes = {{"ID", "gene_" + std::to_string(g + 1)}};
      members.emplace_back();
    }
    Gff3Feature& gene = genes[g];
    gene.start = std::min(gene.start, span.start);
    gene.end = std::max(gene.end, span.end);
    gene.score = std::max(*gene.score, t.score);
    members[g].push_back(i);
  }
  std::vector<Gff3Feature> gff;
  for (size_t g = 0; g < genes.size(); ++g) {
    const std::string gene_id = "gene_" + std::to_string(g + 1);
    gff.push_back(genes[g]);
    for (size_t i : members[g]) {
      const DecodedTranscript& t = transcripts[i];
      const std::string id = "tx_" + std::to_string(i + 1);
      const std::string& type_name = manifest.transcript_types[type_calls[i].index];
      Gff3Feature transcript = feature(type_name, Shifted(t.span, offset), t.strand);
      transcript.score = t.score;
      transcript.attributes = {{"ID", id},
                               {"Parent", gene_id},
                               {"transcript_type_score", FormatValue(type_calls[i].score)},
                               {"tss_position", std::to_string(t.tss_position + offset)},
                               {"polya_position", std::to_string(t.polya_position + offset)}};
      gff.push_back(std::move(transcript));
      for (size_t e = 0; e < t.exons.size(); ++e) {
        Gff3Feature exon = feature("exon", Shifted(t.exons[e], offset), t.strand);
        exon.attributes = {{"ID", id + ".exon_" + std::to_string(e + 1)}, {"Parent", id}};
        gff.push_back(std::move(exon));
      }
      const std::vector<int> phases = CdsPhases(t.cds, t.strand);
      for (size_t c = 0; c < t.cds.size(); ++c) {
        Gff3Feature cds = feature("CDS", Shifted(t.cds[c], offset), t.strand);
        cds.phase = phases[c];
        // GFF3: the segments of one CDS share an ID.
        cds.attributes = {{"ID", id + ".cds"}, {"Parent", id}};
        gff.push_back(std::move(cds));
      }
    }
  }
  const ReplyParts parts = ReplyParts::For(request);
  if (parts.Format("bed")) (*result.mutable_formats())["bed"] = WriteBed(bed);
  if (parts.Format("gff3")) {
    (*result.mutable_formats())["gff3"] = WriteGff3({{seqid, offset, offset + length}}, gff);
  }
  return result;
}

}  // namespace dnaserve::worker
