// SIGTERM from the launcher must not lose a flight-recorder dump this rank
// owes (a failed collective, or another rank's job-wide dump request): the
// handler only wakes a thread (a pipe write is all a signal handler may do),
// the thread flushes the dumps, bounded, then ends the process by SIGTERM as
// the default action would have.
#include <fcntl.h>
#include <pthread.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <mutex>
#include <thread>

#include "hccl/watchdog.h"

namespace npudist::hccl {
namespace {

int g_pipe[2] = {-1, -1};

void onTerm(int) {
  const char c = 't';
  ssize_t n = ::write(g_pipe[1], &c, 1);
  (void)n;
}

void flushThenTerminate() {
  pthread_setname_np(pthread_self(), "hccl-sigterm");
  char c;
  while (::read(g_pipe[0], &c, 1) < 0 && errno == EINTR) {
  }
  Watchdog::get().flushOwedDumps(dumpWaitOnExit(), /*poll_store=*/true);
  std::signal(SIGTERM, SIG_DFL);
  ::kill(::getpid(), SIGTERM);
}

}  // namespace

void installTermFlush() {
  static std::once_flag once;
  std::call_once(once, [] {
    struct sigaction old{};
    if (sigaction(SIGTERM, nullptr, &old) != 0 || old.sa_handler != SIG_DFL) return;
    if (::pipe2(g_pipe, O_CLOEXEC) != 0) return;
    struct sigaction sa{};
    sa.sa_handler = onTerm;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESTART;
    if (sigaction(SIGTERM, &sa, nullptr) != 0) return;
    // A forked child has no flushing thread: it gets the default action back.
    pthread_atfork(nullptr, nullptr, [] { std::signal(SIGTERM, SIG_DFL); });
    std::thread(flushThenTerminate).detach();
  });
}

}  // namespace npudist::hccl
