// Identifiers. Job ids must be unguessable: they are UUIDv4 drawn from OpenSSL's CSPRNG
// (RAND_bytes: a DRBG per thread, seeded from the kernel), 4 KiB at a time per thread. libuuid's uuid_generate_random was
// used before; it also reads getrandom(2), but makes a system call and reseeds random(3) on
// every id, a measurable share of the gateway's per-request cost (BENCHMARKS.md, "The edge's
// own cost").
#pragma once

#include <string>

namespace dnaserve {

std::string NewUuidV4();           // "xxxxxxxx-xxxx-4xxx-yxxx-xxxxxxxxxxxx", lower case
std::string NewHexId32();          // 32 lower-case hex characters (edge request ids)
bool IsUuid(const std::string& s);  // canonical 36-character form, any version

}  // namespace dnaserve
