// Where injected faults (core/fault_inject.h) act in hccl: before a
// collective runs (hang, slow, partition) and in the store the group talks
// through (store_down). docs/fault_injection.md.
#pragma once

#include <torch/csrc/distributed/c10d/Store.hpp>

#include "core/fault_inject.h"

namespace npudist::hccl {

class Engine;
struct OpState;

// Called as a collective starts on this rank, before it publishes anything:
// sleeps (slow), or never lets it join (hang; partition across hosts) until
// the communicator is aborted (the watchdog does at the timeout) or the
// collective's deadline passes, then throws as a failed collective does.
void injectCollectiveFaultImpl(Engine& engine, OpState& state);
inline void injectCollectiveFault(Engine& engine, OpState& state) {
  if (core::fault::active()) injectCollectiveFaultImpl(engine, state);
}

// `store` itself, or (store_down configured) a store that forwards to it
// until the fault's time, then stops answering: every call blocks for the
// store's timeout and raises DistStoreError.
c10::intrusive_ptr<c10d::Store> storeForFaults(const c10::intrusive_ptr<c10d::Store>& store);

}  // namespace npudist::hccl
