// The addresses soft devices answer on, and the port table of the soft CM.
#include <arpa/inet.h>

#include <cerrno>
#include <map>

#include "cm/soft/soft_cm.h"
#include "cm/soft/soft_cm_core.h"
#include "provider/soft/soft_cm_bridge.h"

namespace rxv {
namespace cm {
namespace softcm {

namespace {

struct Table {
  // Insertion order kept for listing (soft0 first).
  std::vector<std::pair<std::string, std::vector<Addr>>> devices;
  std::vector<IdState*> bound;  // ids holding a port
  uint16_t next_ephemeral = 32768;
};

Table& table() {
  static Table* t = [] {
    auto* t = new Table;
    Addr v4, v6;
    parse_addr("127.0.0.1", 0, &v4);
    parse_addr("::1", 0, &v6);
    t->devices.push_back({"soft0", {v4, v6}});
    return t;
  }();
  return *t;
}

bool in_use(const Addr& a, const IdState* except) {
  for (IdState* b : table().bound) {
    if (b == except || b->local.port != a.port) continue;
    if (b->local.same_host(a) || b->local.wildcard() || a.wildcard()) return true;
  }
  return false;
}

std::vector<Addr> parse_all(const std::vector<std::string>& hosts, const std::string& self) {
  std::vector<Addr> out;
  for (const std::string& h : hosts) {
    Addr a;
    if (!parse_addr(h, 0, &a))
      throw VerbsError(EINVAL, "create_soft_device", "'" + h + "' is not a numeric IPv4 or IPv6 address");
    if (a.wildcard())
      throw VerbsError(EINVAL, "create_soft_device", "a device cannot answer on the wildcard address " + h);
    std::string owner = device_of(a);
    if (!owner.empty() && owner != self)
      throw VerbsError(EADDRINUSE, "create_soft_device", h + " already belongs to soft device " + owner);
    out.push_back(a);
  }
  return out;
}

}  // namespace

std::string device_of(const Addr& a) {
  for (auto& [name, addrs] : table().devices)
    for (const Addr& x : addrs)
      if (x.same_host(a)) return name;
  return "";
}

bool blackholed(const Addr& a) {
  // 198.18.0.0/15: the first 15 bits are 11000110 0001001.
  return a.family == AF_INET && a.bytes[0] == 198 && (a.bytes[1] & 0xfe) == 18;
}

void take_port(IdState* id, Addr* a, const char* verb) {
  Table& t = table();
  if (a->port == 0) {
    for (int tries = 0; tries < 28232; ++tries) {
      uint16_t p = t.next_ephemeral;
      t.next_ephemeral = p >= 60999 ? 32768 : uint16_t(p + 1);
      a->port = p;
      if (!in_use(*a, id)) break;
      a->port = 0;
    }
    if (a->port == 0) throw VerbsError(EADDRINUSE, verb, "no ephemeral port is free");
  } else if (in_use(*a, id)) {
    throw VerbsError(EADDRINUSE, verb, host_string(*a) + " port " + std::to_string(a->port) + " is in use");
  }
  id->local = *a;
  if (!id->holds_port) t.bound.push_back(id);
  id->holds_port = true;
}

void release_port(IdState* id) {
  if (!id->holds_port) return;
  auto& v = table().bound;
  for (auto it = v.begin(); it != v.end(); ++it) {
    if (*it == id) {
      v.erase(it);
      break;
    }
  }
  id->holds_port = false;
}

IdState* find_listener(const Addr& dst) {
  IdState* wild = nullptr;
  for (IdState* b : table().bound) {
    if (b->st != St::Listening || b->local.port != dst.port) continue;
    if (b->local.same_host(dst)) return b;
    if (b->local.wildcard() && (b->local.family == AF_INET6 || dst.family == AF_INET)) wild = b;
  }
  return wild;
}

}  // namespace softcm

void soft_cm_check_addresses(const std::vector<std::string>& hosts) {
  softcm::Lock l(softcm::cm_mutex());
  softcm::parse_all(hosts, "");
}

void soft_cm_set_addresses(const std::string& device, const std::vector<std::string>& hosts) {
  softcm::Lock l(softcm::cm_mutex());
  std::vector<Addr> addrs = softcm::parse_all(hosts, device);
  for (auto& entry : softcm::table().devices) {
    if (entry.first == device) {
      entry.second = std::move(addrs);
      return;
    }
  }
  softcm::table().devices.push_back({device, std::move(addrs)});
}

std::vector<std::pair<std::string, std::vector<std::string>>> soft_cm_addresses() {
  std::vector<std::string> names = soft::device_names();  // before our lock
  softcm::Lock l(softcm::cm_mutex());
  std::vector<std::pair<std::string, std::vector<std::string>>> out;
  for (const std::string& n : names) {
    std::vector<std::string> hosts;
    for (auto& [name, addrs] : softcm::table().devices)
      if (name == n)
        for (const Addr& a : addrs) hosts.push_back(host_string(a));
    out.push_back({n, std::move(hosts)});
  }
  return out;
}

bool soft_cm_serves(const std::string& host) {
  Addr a;
  if (!parse_addr(host, 0, &a) || a.wildcard()) return false;
  std::vector<std::string> names = soft::device_names();  // before our lock
  softcm::Lock l(softcm::cm_mutex());
  std::string owner = softcm::device_of(a);
  for (const std::string& n : names)
    if (n == owner) return true;
  return false;
}

}  // namespace cm
}  // namespace rxv
