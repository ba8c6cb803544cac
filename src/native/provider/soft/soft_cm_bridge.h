// What the soft CM (cm/soft/) may know of the soft devices, and nothing
// more: their names, port 1's address, which device a QP lives on, and a
// hook for DEVICE_FATAL. The device model stays private to this folder.
#pragma once

#include <string>
#include <vector>

#include "../provider.h"

namespace rxv {
namespace soft {

std::vector<std::string> device_names();
// Port 1 of `device`: its LID and GID (index 0). False when no such device.
bool port1_address(const std::string& device, uint16_t* lid, Gid* gid);
// The soft device a QP was created on, or "" when it is not a live soft QP.
std::string device_of_qp(Qp* qp);
// Called (without any soft lock held) with the device's name each time
// Faults::device_fatal() kills it. One hook per process.
using DeviceFatalHook = void (*)(const std::string& device);
void set_device_fatal_hook(DeviceFatalHook hook);
void notify_device_fatal(const std::string& device);

}  // namespace soft
}  // namespace rxv
