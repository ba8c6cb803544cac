// rxv::ibverbs_provider(): rdma-core's libibverbs behind the Provider
// interface. Always defined; without RXV_HAVE_IBVERBS (rdma-core headers
// absent at build time) it lists no devices and open() explains why.
#include <cerrno>
#include <string>

#include "../provider.h"

#ifdef RXV_HAVE_IBVERBS
#include <endian.h>

#include <cstring>

#include "ibverbs_loader.h"
#include "ibverbs_objects.h"
#endif

namespace rxv {
namespace {

constexpr const char* kName = "ibverbs";

#ifndef RXV_HAVE_IBVERBS

class IbverbsProvider final : public Provider {
 public:
  const char* name() const override { return kName; }
  std::vector<DeviceInfo> list_devices() override { return {}; }
  std::unique_ptr<Context> open(const std::string& device) override {
    throw VerbsError(ENODEV, "ibv_open_device",
                     "no RDMA device named '" + device +
                         "' (rx-verbs was built without rdma-core headers: "
                         "install libibverbs-dev and rebuild)");
  }
};

#else  // RXV_HAVE_IBVERBS

// ibv_get_device_list, owned for the scope of one call.
class DeviceList {
 public:
  explicit DeviceList(const ibv::Api& a) : a_(a) {
    errno = 0;
    list_ = a_.get_device_list(&n_);
    if (list_ == nullptr) {
      err_ = errno != 0 ? errno : ENODEV;
      n_ = 0;
    }
  }
  ~DeviceList() {
    if (list_ != nullptr) a_.free_device_list(list_);
  }
  DeviceList(const DeviceList&) = delete;
  DeviceList& operator=(const DeviceList&) = delete;
  int size() const { return n_; }
  ibv_device* operator[](int i) const { return list_[i]; }
  int err() const { return err_; }  // errno when the list call failed

 private:
  const ibv::Api& a_;
  ibv_device** list_ = nullptr;
  int n_ = 0;
  int err_ = 0;
};

const char* transport_name(ibv_transport_type t, uint8_t link) {
  switch (t) {
    case IBV_TRANSPORT_IB:
      return link == IBV_LINK_LAYER_ETHERNET ? "Ethernet" : "InfiniBand";
    case IBV_TRANSPORT_IWARP: return "iWARP";
    case IBV_TRANSPORT_USNIC: return "usNIC";
    case IBV_TRANSPORT_USNIC_UDP: return "usNIC UDP";
    case IBV_TRANSPORT_UNSPECIFIED: return "unspecified";
    default: return "unknown";
  }
}

// Port 1's link layer (RoCE devices have IB transport and an Ethernet link).
uint8_t link_layer_of(const ibv::Api& a, ibv_context* ctx) {
  ibv_port_attr pa;
  if (ibv::query_port(a, ctx, 1, &pa) != 0)
    return IBV_LINK_LAYER_UNSPECIFIED;
  return pa.link_layer;
}

DeviceInfo info_of(const ibv::Api& a, ibv_device* dev, ibv_context* open_ctx) {
  DeviceInfo d;
  const char* name = a.get_device_name(dev);
  d.name = name != nullptr ? name : "";
  d.provider = kName;
  // __be64 from libibverbs; host order here, as ibv_devinfo prints it.
  d.node_guid = be64toh(a.get_device_guid(dev));
  uint8_t link = IBV_LINK_LAYER_UNSPECIFIED;
  if (dev->transport_type == IBV_TRANSPORT_IB) {
    if (open_ctx != nullptr) {
      link = link_layer_of(a, open_ctx);
    } else if (ibv_context* ctx = a.open_device(dev)) {
      link = link_layer_of(a, ctx);
      a.close_device(ctx);
    }
  }
  d.transport = transport_name(dev->transport_type, link);
  return d;
}

class IbverbsProvider final : public Provider {
 public:
  const char* name() const override { return kName; }

  std::vector<DeviceInfo> list_devices() override {
    std::vector<DeviceInfo> out;
    const ibv::Api* a = ibv::api();
    if (a == nullptr) return out;  // no libibverbs: no devices, no error
    DeviceList list(*a);
    for (int i = 0; i < list.size(); ++i)
      out.push_back(info_of(*a, list[i], nullptr));
    return out;
  }

  std::unique_ptr<Context> open(const std::string& device) override {
    std::string why;
    const ibv::Api* a = ibv::api(&why);
    if (a == nullptr)
      throw VerbsError(ENODEV, "ibv_open_device",
                       "no RDMA device named '" + device + "' (" + why + ")");
    DeviceList list(*a);
    ibv_device* dev = nullptr;
    std::string names;
    for (int i = 0; i < list.size(); ++i) {
      const char* n = a->get_device_name(list[i]);
      if (n == nullptr) continue;
      if (device == n) dev = list[i];
      if (!names.empty()) names += ", ";
      names += n;
    }
    if (dev == nullptr) {
      std::string detail = "no RDMA device named '" + device + "' (";
      if (list.err() != 0)
        detail += std::string("ibv_get_device_list: ") +
                  std::strerror(list.err()) +
                  (list.err() == ENOSYS
                       ? "; the kernel has no RDMA (uverbs) support"
                       : "");
      else if (names.empty())
        detail +=
            "no RDMA devices found: load the NIC's RDMA driver, or create a "
            "Soft-RoCE device with `rdma link add rxe0 type rxe netdev "
            "<if>`";
      else
        detail += "found: " + names;
      throw VerbsError(ENODEV, "ibv_open_device", detail + ")");
    }
    errno = 0;
    ibv_context* ctx = a->open_device(dev);
    if (ctx == nullptr) {
      int err = errno != 0 ? errno : ENODEV;
      throw VerbsError(err, "ibv_open_device",
                       "cannot open '" + device + "': " + std::strerror(err) +
                           (err == EACCES || err == EPERM
                                ? " (check /dev/infiniband permissions and "
                                  "the memlock limit)"
                                : ""));
    }
    // Non-blocking async fd: get_async_event() says EAGAIN, never blocks.
    int err = ibv::set_nonblock(ctx->async_fd);
    if (err != 0) {
      a->close_device(ctx);
      throw VerbsError(err, "ibv_open_device",
                       "fcntl(O_NONBLOCK) on the async fd failed");
    }
    DeviceInfo info;
    try {
      info = info_of(*a, dev, ctx);
      return std::make_unique<ibv::IbvContext>(a, ctx, std::move(info));
    } catch (...) {
      a->close_device(ctx);
      throw;
    }
  }
};

#endif  // RXV_HAVE_IBVERBS

}  // namespace

Provider& ibverbs_provider() {
  static IbverbsProvider provider;
  return provider;
}

}  // namespace rxv
