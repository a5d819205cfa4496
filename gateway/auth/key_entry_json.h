// One entry of the keys file as a JSON object on one line (what dnaserve-keys prints), in the
// format KeyStore::FromJson reads.
#pragma once

#include <string>

#include "gateway/auth/key_store.h"

namespace dnaserve::gateway {

std::string KeyEntryJson(const KeyEntry& entry);

}  // namespace dnaserve::gateway
