// The soft CM's face to the addon: the addresses soft devices answer on.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace rxv {
namespace cm {

// Throws (EINVAL not numeric, EADDRINUSE another device has it) without
// changing anything: createSoftDevice checks before it creates the device.
void soft_cm_check_addresses(const std::vector<std::string>& hosts);
// Records the addresses of a newly created device (checked as above).
void soft_cm_set_addresses(const std::string& device, const std::vector<std::string>& hosts);
// Every soft device and its addresses, soft0 first.
std::vector<std::pair<std::string, std::vector<std::string>>> soft_cm_addresses();
// Whether a live soft device answers on `host` (any spelling of the
// address): what every connect and listen asks, so it builds nothing.
bool soft_cm_serves(const std::string& host);

}  // namespace cm
}  // namespace rxv
