// What a timeout error says: the collective (group, sequence number, op,
// sizes, dtypes, how long it ran, which limit fired), which ranks never
// joined it and which joined but did not finish — read live from the
// peers' control blocks within a host and through the store across hosts —
// and what to do next. TORCH_HCCL_DESYNC_DEBUG=1 adds every rank's last
// started/completed collective (TORCH_NCCL_DESYNC_DEBUG's report).
#pragma once

#include <string>

#include "hccl/engine.h"
#include "hccl/group_stats.h"
#include "hccl/work.h"

namespace npudist::hccl {

bool desyncDebug();  // TORCH_HCCL_DESYNC_DEBUG

// The full message for a collective that timed out (or was found stuck by
// the watchdog); `cause` is the engine's own message.
std::string describeTimeout(GroupStats& group, Engine& engine, const OpState& op, const std::string& cause);

}  // namespace npudist::hccl
