// The UD half of postSend: the address handles a batch names. In the packed
// form (wr_codec.h) a UD send WR reuses the RDMA fields as ibv_send_wr's
// union does: rkey is an index into the `ahs` array passed with the batch,
// remote_addr is remote_qpn | remote_qkey << 32.
#pragma once

#include <napi.h>

#include <vector>

#include "wrap/ah.h"

namespace rxv {

// Reads the optional `ahs` argument (an array of Ah objects) into wrappers.
// Its element getters may run any JS: call before taking native objects.
// The handles stay alive for the rest of the callback (they are its locals).
std::vector<AhWrap*> ReadAhs(Napi::Env env, Napi::Value v);

// Rewrites decoded WRs of a UD QP into their UD form. An index naming no
// live AH leaves `ah` null, which the provider refuses at that WR.
void ResolveUdWrs(Napi::Env env, const std::vector<AhWrap*>& ahs, std::vector<SendWr>* wrs,
                  size_t count);

}  // namespace rxv
