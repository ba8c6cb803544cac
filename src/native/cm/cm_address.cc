#include "cm/cm_address.h"

#include <arpa/inet.h>

#include <cstring>

namespace rxv {
namespace cm {

bool Addr::wildcard() const {
  static const uint8_t zero[16] = {0};
  return valid() && std::memcmp(bytes, zero, family == AF_INET ? 4 : 16) == 0;
}

bool Addr::same_host(const Addr& o) const {
  return family == o.family && std::memcmp(bytes, o.bytes, family == AF_INET ? 4 : 16) == 0;
}

SockAddr Addr::to_sock() const {
  SockAddr s;
  s.host = host_string(*this);
  s.port = port;
  return s;
}

socklen_t Addr::to_native(sockaddr_storage* out) const {
  std::memset(out, 0, sizeof *out);
  if (family == AF_INET) {
    auto* in = reinterpret_cast<sockaddr_in*>(out);
    in->sin_family = AF_INET;
    in->sin_port = htons(port);
    std::memcpy(&in->sin_addr, bytes, 4);
    return sizeof *in;
  }
  auto* in6 = reinterpret_cast<sockaddr_in6*>(out);
  in6->sin6_family = AF_INET6;
  in6->sin6_port = htons(port);
  std::memcpy(&in6->sin6_addr, bytes, 16);
  return sizeof *in6;
}

bool parse_addr(const std::string& host, uint16_t port, Addr* out) {
  Addr a;
  a.port = port;
  if (host.find('\0') != std::string::npos) return false;
  if (inet_pton(AF_INET, host.c_str(), a.bytes) == 1) {
    a.family = AF_INET;
  } else if (inet_pton(AF_INET6, host.c_str(), a.bytes) == 1) {
    a.family = AF_INET6;
  } else {
    return false;
  }
  *out = a;
  return true;
}

Addr from_native(const sockaddr* sa) {
  Addr a;
  if (sa == nullptr) return a;
  if (sa->sa_family == AF_INET) {
    auto* in = reinterpret_cast<const sockaddr_in*>(sa);
    a.family = AF_INET;
    a.port = ntohs(in->sin_port);
    std::memcpy(a.bytes, &in->sin_addr, 4);
  } else if (sa->sa_family == AF_INET6) {
    auto* in6 = reinterpret_cast<const sockaddr_in6*>(sa);
    a.family = AF_INET6;
    a.port = ntohs(in6->sin6_port);
    std::memcpy(a.bytes, &in6->sin6_addr, 16);
  }
  return a;
}

std::string host_string(const Addr& a) {
  char buf[INET6_ADDRSTRLEN] = {0};
  if (!a.valid() || inet_ntop(a.family, a.bytes, buf, sizeof buf) == nullptr) return "";
  return buf;
}

}  // namespace cm
}  // namespace rxv
