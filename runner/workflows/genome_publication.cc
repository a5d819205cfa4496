#include "runner/workflows/genome_publication.h"

#include "core/render/json_writer.h"
#include "core/validation/variant_request.h"
#include "runner/genome/contig_name.h"

namespace dnaserve::runner {

StatusOr<std::string> GenomeListingJson(const std::string& assembly,
                                        const variant::ReferenceGenome& reference) {
  core::JsonWriter w;
  w.StartObject();
  w.Field("name", assembly);
  w.Key("contigs");
  w.StartArray();
  for (const auto& contig : reference.Contigs()) {
    auto md5 = reference.ContigMd5(contig.name);
    if (!md5.ok()) return md5.status();
    w.StartObject();
    w.Field("name", contig.name);
    w.Key("aliases");
    w.StartArray();
    for (const std::string& alias : variant::ContigAliases(assembly, contig.name)) w.String(alias);
    w.EndArray();
    w.Field("length", contig.length);
    w.Field("md5", *md5);
    w.EndObject();
  }
  w.EndArray();
  w.EndObject();
  return w.Take();
}

Status PublishGenomes(const VariantResources& resources, core::GenomeListing* listing) {
  const GenomeAssets* grch37 = resources.Genome(core::kGrch37);
  if (grch37 == nullptr || !grch37->reference) return Status::Ok();
  auto json = GenomeListingJson(std::string(core::kGrch37), *grch37->reference);
  if (!json.ok()) return json.status();
  return listing->Publish(std::string(core::kGrch37), *json);
}

}  // namespace dnaserve::runner
