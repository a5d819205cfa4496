// GET /v1/genomes: the reference genomes the runners hold (assemblies, contigs with lengths,
// aliases and MD5 digests), as the runners published them at start-up
// (core/jobs/genome_listing.h). The gateway reads no FASTA.
#pragma once

#include "gateway/handlers/services.h"

namespace dnaserve::gateway {

RouteHandler MakeGenomesHandler(const GatewayServices& services);

}  // namespace dnaserve::gateway
