#include "wrap/wr_codec.h"

#include <cstring>

namespace rxv {

namespace {
template <typename T>
T Read(const uint8_t* p) {
  T v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

bool DecodeSges(const uint8_t* data, size_t len, size_t* at, uint32_t n,
                std::vector<Sge>* sg) {
  if (n > kMaxSgePerWr || len - *at < static_cast<size_t>(n) * kSgeBytes) return false;
  sg->resize(n);
  for (uint32_t i = 0; i < n; i++) {
    const uint8_t* p = data + *at;
    (*sg)[i].addr = Read<uint64_t>(p);
    (*sg)[i].length = Read<uint32_t>(p + 8);
    (*sg)[i].lkey = Read<uint32_t>(p + 12);
    *at += kSgeBytes;
  }
  return true;
}
}  // namespace

std::string DecodeSendWrs(const uint8_t* data, size_t len, uint32_t count,
                          std::vector<SendWr>* out) {
  // Sized by what the buffer can hold, never by the caller's count alone.
  if (count > len / kSendWrHeader) return "count is larger than the buffer holds";
  if (out->size() < count) out->resize(count);
  size_t at = 0;
  for (uint32_t i = 0; i < count; i++) {
    if (len - at < kSendWrHeader) return "send work request buffer is truncated";
    const uint8_t* p = data + at;
    SendWr& wr = (*out)[i];
    wr.wr_id = Read<uint64_t>(p);
    wr.remote_addr = Read<uint64_t>(p + 8);
    wr.opcode = Read<uint32_t>(p + 16);
    wr.send_flags = Read<uint32_t>(p + 20);
    wr.imm = Read<uint32_t>(p + 24);
    wr.rkey = Read<uint32_t>(p + 28);
    uint32_t nsge = Read<uint32_t>(p + 32);
    at += kSendWrHeader;
    wr.compare_add = wr.swap = 0;
    if (wr.opcode == wr_opcode::ATOMIC_CMP_AND_SWP || wr.opcode == wr_opcode::ATOMIC_FETCH_AND_ADD) {
      if (len - at < kAtomicOperands) return "send work request " + std::to_string(i) + " lacks its atomic operands";
      wr.compare_add = Read<uint64_t>(data + at);
      wr.swap = Read<uint64_t>(data + at + 8);
      at += kAtomicOperands;
    }
    if (!DecodeSges(data, len, &at, nsge, &wr.sg)) {
      return "send work request " + std::to_string(i) + " has a bad sge count";
    }
  }
  return "";
}

std::string DecodeRecvWrs(const uint8_t* data, size_t len, uint32_t count,
                          std::vector<RecvWr>* out) {
  if (count > len / kRecvWrHeader) return "count is larger than the buffer holds";
  if (out->size() < count) out->resize(count);
  size_t at = 0;
  for (uint32_t i = 0; i < count; i++) {
    if (len - at < kRecvWrHeader) return "receive work request buffer is truncated";
    const uint8_t* p = data + at;
    RecvWr& wr = (*out)[i];
    wr.wr_id = Read<uint64_t>(p);
    uint32_t nsge = Read<uint32_t>(p + 8);
    at += kRecvWrHeader;
    if (!DecodeSges(data, len, &at, nsge, &wr.sg)) {
      return "receive work request " + std::to_string(i) + " has a bad sge count";
    }
  }
  return "";
}

}  // namespace rxv
