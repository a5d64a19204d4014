#include "hccl/watchdog.h"

#include <algorithm>
#include <c10/util/Exception.h>
#include <torch/csrc/distributed/c10d/PrefixStore.hpp>

#include <condition_variable>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <future>
#include <mutex>
#include <pthread.h>
#include <set>
#include <sstream>
#include <thread>

#include "hccl/shm_wait.h"
#include "hccl/engine.h"
#include "hccl/flight_recorder.h"
#include "hccl/work.h"
#include "util/env.h"

namespace npudist::hccl {
namespace {

constexpr const char* kRequestKey = "npudist/hccl/dump_request";
constexpr const char* kProgressPrefix = "npudist/hccl/progress/";
constexpr int64_t kPollNs = 100'000'000;           // the loop's period, as ProcessGroupNCCL's watchdog
constexpr int64_t kStorePollNs = 1'000'000'000;    // job-wide dump requests
constexpr int64_t kStuckGraceNs = 10'000'000'000;  // past its timeout, an unfinished collective is aborted

// A duration in whole seconds, bounded in seconds.
int64_t envWholeSeconds(const char* name, int64_t def, int64_t lo, int64_t hi) {
  return env::getInt(name, def, lo, hi);
}

// A signal number (1-64), or 0 for none.
int envSignal(const char* name, int def) { return int(env::getInt(name, def, 0, 64)); }

bool envFlag(const char* name, bool def) { return env::getBool(name, def); }

std::atomic<bool> g_signal_dump{false};
void onDumpSignal(int) { g_signal_dump.store(true); }

// SIGUSR1 by default; NPUDIST_HCCL_DUMP_SIGNAL=0 turns it off. Installed only
// where nobody handles the signal yet.
void installDumpSignal(int sig) {
  if (sig == 0) return;
  struct sigaction old{};
  if (sigaction(sig, nullptr, &old) != 0 || old.sa_handler != SIG_DFL) return;
  struct sigaction sa{};
  sa.sa_handler = onDumpSignal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;
  sigaction(sig, &sa, nullptr);
}

c10::intrusive_ptr<c10d::Store> rootStore(const c10::intrusive_ptr<c10d::Store>& s) {
  if (auto* p = dynamic_cast<c10d::PrefixStore*>(s.get())) return p->getUnderlyingNonPrefixStore();
  return s;
}

bool breaking(FailureKind k) {
  return k == FailureKind::kTimeout || k == FailureKind::kPeerDead || k == FailureKind::kAborted ||
         k == FailureKind::kOther;
}

std::string progressKey(uint64_t request, const std::string& group, int rank) {
  return c10::str(kProgressPrefix, request, "/", group, "/", rank);
}

void logLine(const std::string& s) {
  std::fprintf(stderr, "[hccl watchdog] rank %d: %s\n", processGlobalRank(), s.c_str());
  std::fflush(stderr);
}

}  // namespace

ErrorHandling asyncErrorHandling() {
  // A mode number, as torch's TORCH_NCCL_ASYNC_ERROR_HANDLING: 0..3 (ErrorHandling).
  static const ErrorHandling mode = ErrorHandling(env::getInt("TORCH_HCCL_ASYNC_ERROR_HANDLING", 3, 0, 3));
  return mode;
}

bool watchdogEnabled() { return envFlag("NPUDIST_HCCL_WATCHDOG", true); }

struct Watchdog::Impl {
  std::mutex mu;
  std::condition_variable cv;  // wakes the loop (failures) and every thread (stop)
  bool started = false;
  // Thread lifecycle (docs/lifecycle.md): each start is a generation; a
  // thread runs while its generation is current, so a thread left detached
  // by a stop (stuck in a store call) ends on its own and never runs on
  // beside the next generation's.
  uint64_t generation = 0;  // guarded by mu
  struct Runner {
    std::thread thread;
    std::shared_ptr<std::atomic<bool>> finished;
  };
  std::vector<Runner> runners;  // guarded by mu
  bool current(uint64_t gen) {
    std::lock_guard<std::mutex> l(mu);
    return gen == generation;
  }
  // Sleeps up to `ns` unless the generation ends; false when it ended.
  bool sleepFor(uint64_t gen, int64_t ns) {
    std::unique_lock<std::mutex> l(mu);
    return !cv.wait_for(l, std::chrono::nanoseconds(ns), [&] { return gen != generation; });
  }
  void spawn(uint64_t gen, void (Impl::*fn)(uint64_t), const char* name);
  std::atomic<int64_t> heartbeat_ns{0};
  // Settings, read by attach() on the user's thread.
  int64_t heartbeat_timeout_s = 480;
  int64_t straggler_period_s = 60;
  bool dump_on_failure = true;
  struct Pending {
    std::shared_ptr<GroupStats> group;
    FailureKind kind;
    std::string message;
  };
  std::deque<Pending> pending;
  std::set<uint64_t> reported_groups, requested_groups;

  std::mutex store_mu;
  c10::intrusive_ptr<c10d::Store> store;
  uint64_t seen_request = 0;

  std::mutex dump_mu;
  int64_t last_dump_ns = 0;
  // Dumps made because something failed are written once per process (as
  // ProcessGroupNCCL does): a later one would hide what the first caught,
  // e.g. a late rank finally joining the collective it missed. A second
  // caller waits until the first one's file is written.
  enum class DumpState { kNone, kWriting, kDone };
  std::mutex dump_state_mu;
  std::condition_variable dump_cv;
  DumpState failure_dump = DumpState::kNone;
  void dumpOnce(const std::string& why);
  // Failures that owe a dump (TORCH_HCCL_DUMP_ON_TIMEOUT), counted as they
  // are reported, before the watchdog thread gets to them: an exit path that
  // comes first still knows it owes one (flushOwedDumps).
  std::atomic<uint64_t> failures_seen{0};
  std::atomic<bool> job_dump_requested{false};
  std::string first_failure;  // under mu
  int64_t next_straggler_log = 0;
  std::map<uint64_t, uint64_t> straggler_seen;  // pg_id -> completed at the last log

  void loop(uint64_t gen);
  void monitor(uint64_t gen);
  void storePoller(uint64_t gen);
  void handle(const Pending& p);
  void checkStuck();
  void pollStore();
  void publishProgress(uint64_t request);
  void stragglerLog();
  [[noreturn]] void terminate(const std::string& why, bool wait_for_peers);
};

Watchdog& Watchdog::get() {
  static Watchdog* w = new Watchdog();  // never destroyed: its threads live until exit
  return *w;
}

namespace {
// Never destroyed: a detached thread may still reach it during exit. In a
// forked child the parent's threads do not exist and its locks may be held:
// the child starts from a fresh one (the old one is leaked on purpose).
std::atomic<Watchdog::Impl*> g_impl{nullptr};
}  // namespace

Watchdog::Impl& Watchdog::impl() {
  Impl* i = g_impl.load(std::memory_order_acquire);
  if (i) return *i;
  static std::once_flag once;
  std::call_once(once, [] {
    g_impl.store(new Impl(), std::memory_order_release);
    pthread_atfork(nullptr, nullptr, [] {
      g_impl.store(new Impl(), std::memory_order_release);
      g_signal_dump.store(false);
    });
  });
  return *g_impl.load(std::memory_order_acquire);
}

void Watchdog::Impl::spawn(uint64_t gen, void (Impl::*fn)(uint64_t), const char* name) {
  auto finished = std::make_shared<std::atomic<bool>>(false);
  Runner r;
  r.finished = finished;
  r.thread = std::thread([this, gen, fn, finished, name] {
    pthread_setname_np(pthread_self(), name);  // tests and ps/top find our threads by name
    (this->*fn)(gen);
    finished->store(true);
    std::lock_guard<std::mutex> l(mu);  // stop() waits on cv for this
    cv.notify_all();
  });
  runners.push_back(std::move(r));
}

int Watchdog::stop(std::chrono::milliseconds wait) {
  Impl& d = impl();
  {
    std::lock_guard<std::mutex> l(d.mu);
    if (!d.started) return 0;
  }
  // The interpreter is exiting (or the last group is going): a failure the
  // watchdog thread has not dumped yet is dumped now, bounded. Nothing to do
  // (no thread, no store call) when nothing failed.
  bool owed = d.failures_seen.load() > 0;
  {
    std::lock_guard<std::mutex> l(d.dump_state_mu);
    owed = owed && d.dump_on_failure && d.failure_dump != Impl::DumpState::kDone;
  }
  if (owed && !flushOwedDumps(dumpWaitOnExit(), /*poll_store=*/false))
    logLine("gave up waiting for the flight-recorder dump before exit (TORCH_HCCL_WAIT_TIMEOUT_DUMP_MILSEC)");
  if (d.failures_seen.load() > 0 && d.job_dump_requested.load() && processGlobalRank() == 0) {
    // This process asked every rank for its dump; their pollers read the
    // request within one poll period. Global rank 0 hosts the store (env://,
    // and npurun's store per restart round), so it stays up that long,
    // bounded as ProcessGroupNCCL bounds its wait for dumps.
    const auto poll = std::chrono::milliseconds(kStorePollNs / 1'000'000 + 500);
    std::this_thread::sleep_for(std::min(poll, dumpWaitOnExit()));
  }
  uninstallTermFlush(wait);
  std::vector<Impl::Runner> runners;
  {
    std::unique_lock<std::mutex> l(d.mu);
    if (!d.started) return 0;
    d.started = false;
    ++d.generation;
    d.cv.notify_all();
    runners.swap(d.runners);
    d.cv.wait_for(l, wait, [&] {
      for (auto& r : runners)
        if (!r.finished->load()) return false;
      return true;
    });
  }
  int detached = 0;
  for (auto& r : runners) {
    if (r.thread.get_id() == std::this_thread::get_id()) {
      r.thread.detach();  // stopped from its own thread: it returns right after
    } else if (r.finished->load()) {
      r.thread.join();
    } else {
      // Stuck past `wait` (a store call to a host that is gone blocks until
      // the store's timeout). It ends on its own when the call returns: it
      // touches only this never-destroyed state, never Python.
      r.thread.detach();
      ++detached;
    }
  }
  return detached;
}

void Watchdog::attach(const std::shared_ptr<GroupStats>& group, const c10::intrusive_ptr<c10d::Store>& store) {
  Impl& d = impl();
  {
    std::lock_guard<std::mutex> l(d.store_mu);
    if (!d.store && store) {
      d.store = rootStore(store);
      try {
        d.seen_request = uint64_t(d.store->add(kRequestKey, 0));
      } catch (const std::exception&) {
        d.store.reset();
      }
    }
  }
  // Read (and validated) here, on the user's thread: an invalid value raises
  // to the caller instead of ending a background thread.
  const bool monitoring = envFlag("TORCH_HCCL_ENABLE_MONITORING", true);
  const int64_t heartbeat_timeout_s = envWholeSeconds("TORCH_HCCL_HEARTBEAT_TIMEOUT_SEC", 480, 1, 7 * 86400);
  const int64_t straggler_period_s = envWholeSeconds("NPUDIST_HCCL_STRAGGLER_LOG_SEC", 60, 0, 86400);
  const bool dump_on_failure = envFlag("TORCH_HCCL_DUMP_ON_TIMEOUT", true);
  const int dump_signal = envSignal("NPUDIST_HCCL_DUMP_SIGNAL", SIGUSR1);
  asyncErrorHandling();
  std::lock_guard<std::mutex> l(d.mu);
  if (d.started) return;
  d.started = true;
  d.heartbeat_timeout_s = heartbeat_timeout_s;
  d.straggler_period_s = straggler_period_s;
  d.dump_on_failure = dump_on_failure;
  d.heartbeat_ns.store(nowNs());
  installDumpSignal(dump_signal);
  if (dump_on_failure) installTermFlush();
  const uint64_t gen = d.generation;
  d.spawn(gen, &Impl::loop, "hccl-watchdog");
  // Store calls wait behind any store call of other threads (TCPStore runs one
  // at a time): polling apart keeps a long user store wait from stalling the
  // watchdog (and its heartbeat).
  d.spawn(gen, &Impl::storePoller, "hccl-storepoll");
  if (monitoring) d.spawn(gen, &Impl::monitor, "hccl-heartbeat");
  (void)group;
}

void Watchdog::onFailure(const std::shared_ptr<GroupStats>& group, FailureKind kind, const std::string& message) {
  Impl& d = impl();
  {
    std::lock_guard<std::mutex> l(d.mu);
    d.pending.push_back({group, kind, message});
    if (d.failures_seen.fetch_add(1) == 0)
      d.first_failure = c10::str(failureKindName(kind), " in process group '", group->name, "'");
  }
  d.cv.notify_one();
}

std::optional<double> Watchdog::heartbeatAgeSeconds() const {
  Impl& d = const_cast<Watchdog*>(this)->impl();
  std::lock_guard<std::mutex> l(d.mu);
  if (!d.started) return std::nullopt;
  return double(nowNs() - d.heartbeat_ns.load()) / 1e9;
}

uint64_t Watchdog::requestJobDump() {
  Impl& d = impl();
  std::lock_guard<std::mutex> l(d.store_mu);
  if (!d.store) return 0;
  try {
    return uint64_t(d.store->add(kRequestKey, 1));
  } catch (const std::exception& e) {
    logLine(c10::str("cannot reach the store to ask other ranks for their flight recorders: ", e.what()));
    d.store.reset();
    return 0;
  }
}

std::map<int, RankProgress> Watchdog::remoteProgress(const GroupStats& group, uint64_t request,
                                                     const std::vector<int>& ranks, std::chrono::milliseconds wait) {
  Impl& d = impl();
  std::map<int, RankProgress> out;
  const int64_t deadline = nowNs() + int64_t(wait.count()) * 1'000'000;
  std::vector<int> missing = ranks;
  while (!missing.empty()) {
    std::vector<int> still;
    for (int r : missing) {
      std::lock_guard<std::mutex> l(d.store_mu);
      if (!d.store) return out;
      try {
        const std::string key = progressKey(request, group.name, r);
        if (!d.store->check({key})) {
          still.push_back(r);
          continue;
        }
        auto v = d.store->get(key);
        std::istringstream is(std::string(v.begin(), v.end()));
        RankProgress p;
        p.group_rank = r;
        p.known = true;
        is >> p.started >> p.completed >> p.started_op;
        out[r] = p;
      } catch (const std::exception&) {
        return out;
      }
    }
    missing.swap(still);
    if (missing.empty() || nowNs() > deadline) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return out;
}

std::string Watchdog::dumpLocal(const std::string& why) {
  if (!FlightRecorder::get().enabled()) return "";
  Impl& d = impl();
  std::lock_guard<std::mutex> l(d.dump_mu);
  const std::string path = FlightRecorder::defaultPath(processGlobalRank());
  const std::string err = FlightRecorder::get().writeTo(path);
  d.last_dump_ns = nowNs();
  if (!err.empty()) {
    logLine("could not write the flight recorder (" + why + "): " + err);
    return "";
  }
  logLine("flight recorder dumped to " + path + " (" + why + ")");
  return path;
}

void Watchdog::Impl::loop(uint64_t gen) {
  while (true) {
    heartbeat_ns.store(nowNs());
    std::deque<Pending> work;
    {
      std::unique_lock<std::mutex> l(mu);
      cv.wait_for(l, std::chrono::nanoseconds(kPollNs), [&] { return !pending.empty() || gen != generation; });
      if (gen != generation) return;
      work.swap(pending);
    }
    for (const auto& p : work) handle(p);
    if (g_signal_dump.exchange(false)) Watchdog::get().dumpLocal("signal");
    checkStuck();
    stragglerLog();
  }
}

void Watchdog::Impl::handle(const Pending& p) {
  const bool is_breaking = breaking(p.kind);
  const uint64_t pg = p.group->pg_id;
  bool first;
  {
    std::lock_guard<std::mutex> l(mu);
    first = reported_groups.insert(pg).second || !is_breaking;
  }
  if (first) {
    logLine(c10::str("collective failed (", failureKindName(p.kind), ") in process group '", p.group->name, "' (",
                     p.group->desc(), "): ", p.message));
  }
  if (dump_on_failure && FlightRecorder::get().enabled()) {
    dumpOnce(c10::str(failureKindName(p.kind), " in process group '", p.group->name, "'"));
    bool request;
    {
      std::lock_guard<std::mutex> l(mu);
      request = requested_groups.insert(pg).second;
    }
    if (request) {
      job_dump_requested.store(true);
      Watchdog::get().requestJobDump();
    }
  }
  if (!is_breaking) return;
  const ErrorHandling mode = asyncErrorHandling();
  if (mode == ErrorHandling::kNoHandling) return;
  if (mode == ErrorHandling::kTearDown || mode == ErrorHandling::kCleanUpOnly) {
    for (const auto& g : liveGroups())
      if (auto e = g->engine.lock()) e->abort(c10::str("watchdog of rank ", processGlobalRank(), ": ", p.message));
  }
  if (mode == ErrorHandling::kTearDown || mode == ErrorHandling::kSkipCleanUp) {
    terminate(p.message, /*wait_for_peers=*/true);
  }
}

void Watchdog::Impl::terminate(const std::string& why, bool wait_for_peers) {
  // Stay a moment: the thread that waited for the failed collective raises
  // its own error meanwhile, and other ranks (polling the store, which may
  // live in this process, once a second) see the dump request.
  if (wait_for_peers) std::this_thread::sleep_for(std::chrono::milliseconds(2000));
  logLine(c10::str("to avoid running on with inconsistent data, the process is being taken down (",
                   "TORCH_HCCL_ASYNC_ERROR_HANDLING=", int(asyncErrorHandling()),
                   "; set it to 0 or 2 to keep the process and handle the error yourself). Cause: ", why));
  std::fflush(stdout);
  std::abort();
}

void Watchdog::Impl::checkStuck() {
  const int64_t now = nowNs();
  for (const auto& g : liveGroups()) {
    auto engine = g->engine.lock();
    if (!engine || engine->user_aborted) continue;
    const int64_t limit = int64_t(engine->effectiveTimeout().count()) * 1'000'000;
    // Found under the group's lock, aborted after it (abort wakes the
    // collective's thread, which then finishes it under that lock).
    std::vector<std::string> stuck;
    g->forEachInFlight([&](OpState& op) {
      if (op.done.load(std::memory_order_acquire) || op.timed_out_by_watchdog.load()) return;
      const int64_t start = op.start_ns.load(std::memory_order_relaxed);
      const char* what = nullptr;
      int64_t age = 0;
      if (start && now - start > limit + kStuckGraceNs) {
        what = "ran";
        age = now - start;
      } else if (!start && now - op.enqueue_ns > limit) {
        what = "waited in its stream's queue (behind earlier work) for";
        age = now - op.enqueue_ns;
      }
      if (!what) return;
      op.timed_out_by_watchdog.store(true);
      stuck.push_back(c10::str("watchdog of rank ", processGlobalRank(), ": ", op.name,
                               " collective_seq_id=", op.collective_seq, " ", what, " ", double(age) / 1e9, " s, past ",
                               engine->timeoutLabel()));
    });
    for (const auto& why : stuck) engine->abort(why, FailureKind::kTimeout);
  }
}

void Watchdog::Impl::storePoller(uint64_t gen) {
  while (sleepFor(gen, kStorePollNs)) pollStore();
}

void Watchdog::Impl::publishProgress(uint64_t request) {
  for (const auto& g : liveGroups()) {
    auto p = g->progress();
    const std::string v = c10::str(p.started, " ", p.completed, " ", opKindName(p.started_kind));
    std::lock_guard<std::mutex> l(store_mu);
    if (!store) return;
    store->set(progressKey(request, g->name, g->rank), std::vector<uint8_t>(v.begin(), v.end()));
  }
}

void Watchdog::Impl::pollStore() {
  uint64_t now_seen = 0, before = 0;
  {
    std::lock_guard<std::mutex> l(store_mu);
    if (liveGroups().empty()) {
      store.reset();  // the job's store may be going away with its groups
      return;
    }
    if (!store) return;
    try {
      now_seen = uint64_t(store->add(kRequestKey, 0));
    } catch (const std::exception&) {
      store.reset();
      return;
    }
    before = seen_request;
    seen_request = std::max(seen_request, now_seen);
  }
  if (now_seen <= before) return;
  try {
    for (uint64_t r = before + 1; r <= now_seen; ++r) publishProgress(r);
  } catch (const std::exception&) {
    std::lock_guard<std::mutex> l(store_mu);
    store.reset();
  }
  dumpOnce(c10::str("job-wide request #", now_seen));
}

void Watchdog::Impl::dumpOnce(const std::string& why) {
  std::unique_lock<std::mutex> l(dump_state_mu);
  if (failure_dump != DumpState::kNone) {
    dump_cv.wait(l, [&] { return failure_dump == DumpState::kDone; });
    return;
  }
  failure_dump = DumpState::kWriting;
  l.unlock();
  try {
    Watchdog::get().dumpLocal(why);
  } catch (const std::exception& e) {
    logLine(c10::str("could not write the flight recorder (", why, "): ", e.what()));
  }
  l.lock();
  failure_dump = DumpState::kDone;
  dump_cv.notify_all();
}

bool Watchdog::flushOwedDumps(std::chrono::milliseconds wait, bool poll_store) {
  if (!FlightRecorder::get().enabled()) return true;
  Impl& d = impl();
  auto done = std::make_shared<std::promise<void>>();
  auto finished = done->get_future();
  // On a thread of its own: a store call or a slow disk must not hold the
  // exiting process longer than `wait` (ProcessGroupNCCL bounds its wait for
  // the dump the same way, TORCH_NCCL_WAIT_TIMEOUT_DUMP_MILSEC).
  std::thread([&d, done, poll_store] {
    try {
      if (d.dump_on_failure && d.failures_seen.load() > 0) {
        std::string why;
        {
          std::lock_guard<std::mutex> l(d.mu);
          why = d.first_failure;
        }
        d.dumpOnce(why + ", written before the process ends");
        if (!d.job_dump_requested.exchange(true)) Watchdog::get().requestJobDump();
      }
      if (poll_store) d.pollStore();  // a job-wide request made since the poller last looked (once a second)
      std::unique_lock<std::mutex> l(d.dump_state_mu);
      d.dump_cv.wait(l, [&] { return d.failure_dump != Impl::DumpState::kWriting; });
    } catch (const std::exception&) {
    }
    done->set_value();
  }).detach();
  return finished.wait_for(wait) == std::future_status::ready;
}

std::chrono::milliseconds dumpWaitOnExit() {
  return std::chrono::milliseconds(env::getInt("TORCH_HCCL_WAIT_TIMEOUT_DUMP_MILSEC", 15000, 0, 3'600'000));
}

void Watchdog::Impl::stragglerLog() {
  const int64_t period_s = straggler_period_s;
  if (period_s == 0) return;
  const int64_t now = nowNs();
  if (!next_straggler_log) next_straggler_log = now + period_s * 1'000'000'000;
  if (now < next_straggler_log) return;
  next_straggler_log = now + period_s * 1'000'000'000;
  for (const auto& g : liveGroups()) {
    auto engine = g->engine.lock();
    if (!engine || engine->topo.my_local != 0 || engine->local().size() < 2) continue;
    const uint64_t done = g->progress().completed;
    uint64_t& seen = straggler_seen[g->pg_id];
    if (done == seen) continue;  // no collectives since the last report
    seen = done;
    auto scores = engine->local().stragglerScores();
    size_t worst = 0;
    for (size_t i = 1; i < scores.size(); ++i)
      if (scores[i] > scores[worst]) worst = i;
    std::ostringstream os;
    os << "straggler report for process group '" << g->name << "' (" << g->desc() << ") on host '"
       << engine->topo.hosts[size_t(engine->topo.my_host)] << "': slowest rank "
       << engine->local().groupRankOf(int(worst)) << " keeps the others waiting " << scores[worst] * 1e3
       << " ms per collective (recent-weighted); all:";
    for (size_t i = 0; i < scores.size(); ++i)
      os << " rank " << engine->local().groupRankOf(int(i)) << " " << scores[i] * 1e3 << " ms";
    logLine(os.str());
  }
}

void Watchdog::Impl::monitor(uint64_t gen) {
  const int64_t timeout_s = heartbeat_timeout_s;
  const int64_t step_ns = std::min<int64_t>(1000, timeout_s * 250) * 1'000'000;
  while (sleepFor(gen, step_ns)) {
    const double age = double(nowNs() - heartbeat_ns.load()) / 1e9;
    if (age <= double(timeout_s)) continue;
    logLine(c10::str("the watchdog thread has not gone round its loop for ", age,
                     " s (TORCH_HCCL_HEARTBEAT_TIMEOUT_SEC=", timeout_s,
                     "): it is stuck, most likely in a store call or a hung communicator; ending the process so "
                     "the job does not hang (TORCH_HCCL_ENABLE_MONITORING=0 turns this off)"));
    auto dumped = std::async(std::launch::async, [] { return Watchdog::get().dumpLocal("watchdog stalled"); });
    dumped.wait_for(std::chrono::seconds(5));
    std::fflush(stdout);
    std::abort();
  }
}

}  // namespace npudist::hccl
