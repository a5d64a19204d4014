#include "hccl/desync.h"
#include "util/env.h"

#include <c10/util/Exception.h>

#include <cstdlib>
#include <sstream>

#include "hccl/shm_wait.h"
#include "hccl/flight_recorder.h"
#include "hccl/watchdog.h"

namespace npudist::hccl {
namespace {

std::string tensorsText(const std::vector<at::Tensor>& ts) {
  std::ostringstream os;
  os << "[";
  bool first = true;
  for (const auto& t : ts) {
    if (!t.defined()) continue;
    os << (first ? "" : ", ") << t.scalar_type() << t.sizes();
    first = false;
  }
  os << "]";
  return os.str();
}

// Every rank's progress in the group: local peers from their control
// blocks, ranks on other hosts through the store (they answer a job-wide
// request from their watchdogs, within about a second).
std::vector<RankProgress> groupProgress(GroupStats& group, Engine& engine) {
  std::vector<RankProgress> all(size_t(group.size));
  for (int r = 0; r < group.size; ++r) all[size_t(r)].group_rank = r;
  for (const auto& p : engine.local().peerProgress()) {
    RankProgress& rp = all[size_t(p.group_rank)];
    rp.known = true;
    rp.alive = p.alive;
    rp.started = p.started;
    rp.completed = p.done;
    rp.started_op = opKindName(p.started_kind);
  }
  if (!engine.topo.singleHost()) {
    std::vector<int> remote;
    for (int r = 0; r < group.size; ++r)
      if (engine.topo.localIndexOf(r) < 0) remote.push_back(r);
    const uint64_t request = Watchdog::get().requestJobDump();
    if (request) {
      for (auto& [r, p] : Watchdog::get().remoteProgress(group, request, remote, std::chrono::milliseconds(4000)))
        all[size_t(r)] = p;
    }
  }
  return all;
}

}  // namespace

bool desyncDebug() {
  static const bool on = env::getBool("TORCH_HCCL_DESYNC_DEBUG", false);
  return on;
}

std::string describeTimeout(GroupStats& group, Engine& engine, const OpState& op, const std::string& cause) {
  const uint64_t k = op.collective_seq;
  const int64_t start = op.start_ns.load() ? op.start_ns.load() : op.enqueue_ns;
  std::ostringstream os;
  os << "hccl watchdog caught a collective timeout in process group '" << group.name << "' (" << group.desc()
     << "), rank " << group.rank << " of " << group.size << ": " << opKindName(op.kind);
  if (op.is_p2p) {
    os << " p2p_seq_id=" << op.p2p_seq;
  } else {
    os << " collective_seq_id=" << k;
  }
  os << " op_id=" << op.op_id << ", inputs " << tensorsText(op.inputList()) << ", outputs " << tensorsText(op.outputs)
     << ", ran for " << double(nowNs() - start) / 1e9 << " s (limit: " << engine.timeoutLabel()
     << ").\n  Cause: " << cause;
  if (!op.is_p2p && k > 0) {
    std::vector<int> never_joined, unfinished, idle_before, silent, exited;
    const auto all = groupProgress(group, engine);
    for (const auto& p : all) {
      if (p.group_rank == group.rank) continue;
      if (!p.known) {
        silent.push_back(p.group_rank);
        continue;
      }
      if (!p.alive) exited.push_back(p.group_rank);
      if (p.started < k) {
        never_joined.push_back(p.group_rank);
        if (p.completed == p.started) idle_before.push_back(p.group_rank);
      } else if (p.completed < k) {
        unfinished.push_back(p.group_rank);
      }
    }
    os << "\n  Ranks that never joined #" << k << ": " << rankList(never_joined);
    os << "\n  Ranks that joined #" << k << " but did not finish it: " << rankList(unfinished);
    if (!exited.empty()) os << "\n  Ranks whose process has exited: " << rankList(exited);
    if (!silent.empty())
      os << "\n  Ranks on other hosts that did not answer (dead, or their watchdog cannot reach the store): "
         << rankList(silent);
    if (desyncDebug()) {
      os << "\n  Desync report (TORCH_HCCL_DESYNC_DEBUG=1):";
      if (k > 1) os << "\n    finished #" << k - 1 << " but never joined #" << k << ": " << rankList(idle_before);
      for (const auto& p : all) {
        os << "\n    rank " << p.group_rank << ": ";
        if (!p.known) {
          os << "no answer";
          continue;
        }
        os << "last started #" << p.started << " (" << p.started_op << "), last completed #" << p.completed
           << (p.alive ? "" : ", process exited");
      }
    }
  }
  os << "\n  What to do: look at what the ranks that never joined are doing (their logs, or `py-spy dump --pid "
        "PID`): they are usually stuck elsewhere or took another code path. Every rank dumps its flight recorder to "
     << FlightRecorder::defaultPath(0).substr(0, FlightRecorder::defaultPath(0).size() - 1)
     << "<rank> (TORCH_HCCL_DEBUG_INFO_TEMP_FILE); `torchfrtrace <dir> -p <file prefix>` names the culprit. Raise "
        "the timeout (init_process_group(timeout=...), HCCL_EXEC_TIMEOUT, or group.set_timeout(...) on a live group: "
        "torch's private _set_pg_timeout does not reach hccl) only if the work is legitimately slow.";
  return os.str();
}

}  // namespace npudist::hccl
