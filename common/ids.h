// Identifiers. Job ids must be unguessable: they are UUIDv4 drawn from the kernel CSPRNG
// (libuuid's uuid_generate_random reads getrandom(2)).
#pragma once

#include <string>

namespace dnaserve {

std::string NewUuidV4();           // "xxxxxxxx-xxxx-4xxx-yxxx-xxxxxxxxxxxx", lower case
std::string NewHexId32();          // 32 lower-case hex characters (edge request ids)
bool IsUuid(const std::string& s);  // canonical 36-character form, any version

}  // namespace dnaserve
