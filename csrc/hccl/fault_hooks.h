// Where injected faults (core/fault_inject.h) act in hccl: before a
// collective runs (hang, slow, partition) and in the store the group talks
// through (store_down). docs/fault_injection.md.
#pragma once

#include <torch/csrc/distributed/c10d/Store.hpp>

#include "core/fault_inject.h"

namespace npudist::hccl {

class Engine;
struct OpState;

// Called on the user's thread as a collective is issued, before anything
// records it (`name`: "all_reduce", ...; a coalesced batch's wrapper is not
// counted): counts it, sleeps (slow), or holds the caller (hang) for the
// group's timeout + 2 s, so that its peers give up first; then the collective
// goes on and fails (or runs late) as a late rank's does.
void injectIssueFaultImpl(Engine& engine, const char* name);
inline void injectIssueFault(Engine& engine, const char* name) {
  if (core::fault::active()) injectIssueFaultImpl(engine, name);
}

// Called as a collective runs, after it announced itself: partition stalls
// one that crosses to a partitioned peer on another host until the
// communicator is aborted (the watchdog does at the timeout) or the
// deadline passes, then throws as a failed collective does.
void injectRunFaultImpl(Engine& engine, OpState& state);
inline void injectRunFault(Engine& engine, OpState& state) {
  if (core::fault::active()) injectRunFaultImpl(engine, state);
}

// `store` itself, or (store_down configured) a store that forwards to it
// until the fault's time, then stops answering: every call blocks for the
// store's timeout and raises DistStoreError.
c10::intrusive_ptr<c10d::Store> storeForFaults(const c10::intrusive_ptr<c10d::Store>& store);

}  // namespace npudist::hccl
