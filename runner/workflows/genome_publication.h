// GET /v1/genomes from a runner's side: the reference genomes it holds, published into Redis at
// start-up (core/jobs/genome_listing.h says why there and not through the queue).
#pragma once

#include <string>

#include "common/status.h"
#include "core/jobs/genome_listing.h"
#include "runner/genome/reference_genome.h"
#include "runner/workflows/variant_resources.h"

namespace dnaserve::runner {

// One assembly's listing object: {name, contigs: [{name, aliases, length, md5}]}, contigs in the
// FASTA's order; md5 of the upper-cased sequence (VCF ##contig / refget convention); aliases the
// other spelling a request may use ("20" <-> "chr20").
StatusOr<std::string> GenomeListingJson(const std::string& assembly,
                                        const variant::ReferenceGenome& reference);

// Publishes every assembly `resources` holds (none: nothing is written).
Status PublishGenomes(const VariantResources& resources, core::GenomeListing* listing);

}  // namespace dnaserve::runner
