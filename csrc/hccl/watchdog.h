// The hccl watchdog (one per process, over every hccl group), modelled on
// ProcessGroupNCCL's: a thread that polls outstanding collectives every
// 100 ms, aborts communicators whose collective outlived its timeout, reacts
// to failures as TORCH_HCCL_ASYNC_ERROR_HANDLING says, dumps the flight
// recorder (on failure and on SIGUSR1) and logs straggler reports; a thread
// that checks the job's store once a second for dump requests of other
// ranks; and a heartbeat monitor that ends the process if the watchdog itself
// stalls (TORCH_HCCL_ENABLE_MONITORING, TORCH_HCCL_HEARTBEAT_TIMEOUT_SEC).
// docs/watchdog.md has the semantics.
#pragma once

#include <torch/csrc/distributed/c10d/Store.hpp>

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "hccl/group_stats.h"
#include "hccl/local_comm.h"

namespace npudist::hccl {

// TORCH_HCCL_ASYNC_ERROR_HANDLING (the values of TORCH_NCCL_ASYNC_ERROR_HANDLING).
enum class ErrorHandling { kNoHandling = 0, kTearDown = 1, kCleanUpOnly = 2, kSkipCleanUp = 3 };
ErrorHandling asyncErrorHandling();

// NPUDIST_HCCL_WATCHDOG=0: no watchdog, flight recorder or counters for the
// groups made while it is set (for measuring their cost;
// benchmarks/watchdog_overhead.py). Default on.
bool watchdogEnabled();

// A peer's progress in a group, as published for desync reports.
struct RankProgress {
  int group_rank = 0;
  bool known = false;  // false: it never answered
  bool alive = true;
  uint64_t started = 0;  // collective_seq_id of its last started / completed collective
  uint64_t completed = 0;
  std::string started_op;
};

class Watchdog {
 public:
  static Watchdog& get();

  // Starts the threads (once) and watches `group`; `store` is the group's
  // store (its non-prefixed root carries job-wide dump requests).
  void attach(const std::shared_ptr<GroupStats>& group, const c10::intrusive_ptr<c10d::Store>& store);

  // A collective of `group` failed; `message` is its final error. Cheap:
  // the watchdog thread logs, dumps and acts on it.
  void onFailure(const std::shared_ptr<GroupStats>& group, FailureKind kind, const std::string& message);

  // Seconds since the watchdog thread last went round its loop; nullopt when
  // it is not running.
  std::optional<double> heartbeatAgeSeconds() const;

  // Asks every rank of the job to dump its flight recorder and publish its
  // progress; returns the request number (0 when no store is reachable).
  uint64_t requestJobDump();
  // The progress of `ranks` (group ranks) of `group` published after request
  // `request`, waiting up to `wait` for them.
  std::map<int, RankProgress> remoteProgress(const GroupStats& group, uint64_t request, const std::vector<int>& ranks,
                                             std::chrono::milliseconds wait);

  // Writes this rank's flight recorder to its dump file; returns the path,
  // or "" when disabled or failed (the reason is logged).
  std::string dumpLocal(const std::string& why);

  // Stops the watchdog's threads and joins them, waiting up to `wait`; a
  // thread still inside a store call then is detached and ends on its own
  // (it never touches Python). The next attach() starts new threads. Done
  // when the last hccl group is shut down and at interpreter exit
  // (docs/lifecycle.md). Returns the number of threads left detached.
  int stop(std::chrono::milliseconds wait);

  // Makes sure what this process owes is on disk before it ends: the failure
  // dump if one of its collectives failed (TORCH_HCCL_DUMP_ON_TIMEOUT; the
  // job-wide request too if not made yet), and the answer to a job-wide dump
  // request another rank made. Waits at most `wait`; true if all was written
  // in time. poll_store: also look for a job-wide request now (the store
  // poller looks once a second). Called by stop() (interpreter exit, without
  // a store poll: a store gone with rank 0 would hold every exit) and on
  // SIGTERM (with it).
  bool flushOwedDumps(std::chrono::milliseconds wait, bool poll_store);

  struct Impl;

 private:
  Watchdog() = default;
  Impl& impl();
};

// TORCH_HCCL_WAIT_TIMEOUT_DUMP_MILSEC (default 15000, PyTorch's default for
// its NCCL twin): how long an ending process waits for its dumps.
std::chrono::milliseconds dumpWaitOnExit();

// On SIGTERM (the launcher stopping the job), when nobody handles SIGTERM
// yet: flushOwedDumps(dumpWaitOnExit()), then the default action (the
// process ends by SIGTERM). Installed once by the first attach() with
// TORCH_HCCL_DUMP_ON_TIMEOUT on; a handler installed later (Python's
// signal.signal) replaces it, and that process's exit flushes in stop().
void installTermFlush();
// Ends installTermFlush()'s thread (waiting at most `wait`) and gives SIGTERM its default action back;
// called when the watchdog stops, so no hccl thread outlives the last group.
void uninstallTermFlush(std::chrono::milliseconds wait);

}  // namespace npudist::hccl
