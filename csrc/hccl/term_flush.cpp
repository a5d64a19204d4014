// SIGTERM from the launcher must not lose a flight-recorder dump this rank
// owes (a failed collective, or another rank's job-wide dump request): the
// handler only wakes a thread (a pipe write is all a signal handler may do),
// the thread flushes the dumps, bounded, then ends the process by SIGTERM as
// the default action would have.
#include <fcntl.h>
#include <pthread.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <mutex>
#include <thread>

#include "hccl/watchdog.h"

namespace npudist::hccl {
namespace {

// One pipe for the life of the process (a signal handler may only write to it); the thread reading it runs
// between installTermFlush() and uninstallTermFlush(), i.e. while the watchdog runs.
int g_pipe[2] = {-1, -1};
std::mutex g_mu;
bool g_installed = false;
std::atomic<bool> g_running{false};
constexpr char kTerm = 't', kQuit = 'q';

void onTerm(int) {
  const char c = kTerm;
  ssize_t n = ::write(g_pipe[1], &c, 1);
  (void)n;
}

void flushThenTerminate() {
  pthread_setname_np(pthread_self(), "hccl-sigterm");
  char c = 0;
  while (::read(g_pipe[0], &c, 1) < 0 && errno == EINTR) {
  }
  if (c == kQuit) {  // the watchdog stopped (last group gone, or exit): SIGTERM has its default action again
    g_running.store(false);
    return;
  }
  Watchdog::get().flushOwedDumps(dumpWaitOnExit(), /*poll_store=*/true);
  std::signal(SIGTERM, SIG_DFL);
  ::kill(::getpid(), SIGTERM);
}

}  // namespace

void installTermFlush() {
  std::lock_guard<std::mutex> l(g_mu);
  if (g_installed) return;
  struct sigaction old{};
  if (sigaction(SIGTERM, nullptr, &old) != 0 || old.sa_handler != SIG_DFL) return;
  if (g_pipe[0] < 0 && ::pipe2(g_pipe, O_CLOEXEC) != 0) return;
  struct sigaction sa{};
  sa.sa_handler = onTerm;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;
  if (sigaction(SIGTERM, &sa, nullptr) != 0) return;
  static std::once_flag atfork;
  // A forked child has no flushing thread: it gets the default action back.
  std::call_once(atfork, [] {
    pthread_atfork(nullptr, nullptr, [] {
      std::signal(SIGTERM, SIG_DFL);
      g_installed = false;
      g_running.store(false);
    });
  });
  g_running.store(true);
  std::thread(flushThenTerminate).detach();
  g_installed = true;
}

void uninstallTermFlush(std::chrono::milliseconds wait) {
  std::lock_guard<std::mutex> l(g_mu);
  if (!g_installed) return;
  g_installed = false;
  // Only while our handler is still the one installed (Python's signal.signal may have replaced it).
  struct sigaction cur{};
  if (sigaction(SIGTERM, nullptr, &cur) == 0 && cur.sa_handler == onTerm) std::signal(SIGTERM, SIG_DFL);
  const char c = kQuit;
  ssize_t n = ::write(g_pipe[1], &c, 1);
  (void)n;
  // Bounded: a SIGTERM that arrived first makes the thread flush and end the process instead.
  const auto deadline = std::chrono::steady_clock::now() + wait;
  while (g_running.load() && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
}

}  // namespace npudist::hccl
