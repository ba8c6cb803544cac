// Numeric socket addresses for the CM: parsed once (no name is ever
// resolved: a host name would mean a blocking lookup on the JS thread) and
// compared as bytes, so "::1" and "0:0::1" are the same address.
#pragma once

#include <netinet/in.h>
#include <sys/socket.h>

#include <cstdint>
#include <string>

#include "cm/cm_provider.h"

namespace rxv {
namespace cm {

struct Addr {
  int family = 0;  // AF_INET or AF_INET6; 0 when unset
  uint8_t bytes[16] = {0};
  uint16_t port = 0;

  bool valid() const { return family != 0; }
  bool wildcard() const;
  // Same family and bytes (ports are not compared).
  bool same_host(const Addr& o) const;
  SockAddr to_sock() const;
  // As a sockaddr_in / sockaddr_in6 (ports in network order).
  socklen_t to_native(sockaddr_storage* out) const;
};

// False when `host` is not a numeric IPv4 or IPv6 address.
bool parse_addr(const std::string& host, uint16_t port, Addr* out);
// The address a sockaddr holds (AF_INET / AF_INET6), else an invalid one.
Addr from_native(const sockaddr* sa);
std::string host_string(const Addr& a);

}  // namespace cm
}  // namespace rxv
