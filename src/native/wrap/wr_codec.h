// The packed form in which JS hands work requests to the addon: one buffer,
// little-endian, per send WR a 40-byte header
//   u64 wr_id | u64 remote_addr | u32 opcode | u32 send_flags | u32 imm |
//   u32 rkey | u32 num_sge | u32 reserved
// then, for ATOMIC_CMP_AND_SWP and ATOMIC_FETCH_AND_ADD only, 16 bytes
//   u64 compare_add | u64 swap
// followed by num_sge 16-byte entries  u64 addr | u32 length | u32 lkey;
// per receive WR a 16-byte header  u64 wr_id | u32 num_sge | u32 reserved
// followed by its entries. The decoder trusts nothing: counts and sizes are
// checked against the buffer.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "provider/provider.h"

namespace rxv {

constexpr size_t kSendWrHeader = 40;
constexpr size_t kRecvWrHeader = 16;
constexpr size_t kSgeBytes = 16;
constexpr size_t kAtomicOperands = 16;
constexpr uint32_t kMaxSgePerWr = 64;

// Returns an empty string on success, else what is wrong.
std::string DecodeSendWrs(const uint8_t* data, size_t len, uint32_t count,
                          std::vector<SendWr>* out);
std::string DecodeRecvWrs(const uint8_t* data, size_t len, uint32_t count,
                          std::vector<RecvWr>* out);

}  // namespace rxv
