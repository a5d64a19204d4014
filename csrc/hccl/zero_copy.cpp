// The zero-copy paths of LocalComm (zero_copy.h). Each collective: publish
// buffers (zcPublish) -> arrive -> agree (zcAgree) -> move data reading peers'
// buffers in place -> one closing step.
#include "hccl/zero_copy.h"

#include <c10/util/Exception.h>
#include <c10/util/Logging.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "core/ipc.h"
#include "hccl/local_comm.h"
#include "util/env.h"

#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434
#endif
#ifndef SYS_pidfd_getfd
#define SYS_pidfd_getfd 438
#endif

namespace npudist::hccl {

namespace {
std::atomic<int> g_enabled{-1};  // -1: not read from the environment yet
}

bool zeroCopyEnabled() {
  int v = g_enabled.load(std::memory_order_relaxed);
  if (C10_LIKELY(v >= 0)) return v != 0;
  const bool on = env::getBool("NPUDIST_HCCL_ZERO_COPY", true);  // docs/env_vars.md
  int expected = -1;
  g_enabled.compare_exchange_strong(expected, on ? 1 : 0);
  return g_enabled.load() != 0;
}

void setZeroCopyEnabled(bool on) { g_enabled.store(on ? 1 : 0); }

namespace {
std::atomic<uint64_t> g_zero_copy_count{0};
std::atomic<bool> g_skip_close{false};
}  // namespace

void setZeroCopySkipClosingStep(bool on) { g_skip_close.store(on); }

uint64_t zeroCopyCollectiveCount() { return g_zero_copy_count.load(std::memory_order_relaxed); }

bool zeroCopyLocate(const void* p, int64_t bytes, int32_t* device, int32_t* fd, int64_t* file_offset) {
  int dev = -1, f = -1;
  size_t off = 0;
  if (bytes <= 0 || !core::ipc::locate(p, size_t(bytes), &dev, &f, &off)) return false;
  *device = dev;
  *fd = f;
  *file_offset = int64_t(off);
  return true;
}

ZeroCopy::~ZeroCopy() {
  for (auto& [key, f] : files_) {
    if (f.base) munmap(f.base, f.size);
    if (f.local_fd >= 0) close(f.local_fd);
  }
}

uint8_t* ZeroCopy::mapped(int pid, int fd) const {
  auto it = files_.find({pid, fd});
  return it == files_.end() ? nullptr : it->second.base;
}

uint8_t* ZeroCopy::map(int pid, int fd, std::string* err) {
  if (uint8_t* b = mapped(pid, fd)) return b;
  if (pid == getpid()) {
    *err = "a peer is this same process";
    return nullptr;
  }
  int pidfd = int(syscall(SYS_pidfd_open, pid, 0));
  if (pidfd < 0) {
    *err = c10::str("pidfd_open(", pid, "): ", std::strerror(errno));
    return nullptr;
  }
  int local = int(syscall(SYS_pidfd_getfd, pidfd, fd, 0));
  int saved = errno;
  close(pidfd);
  if (local < 0) {
    *err = c10::str("pidfd_getfd(pid ", pid, ", fd ", fd, "): ", std::strerror(saved),
                    " (needs ptrace access to the peer: same user and kernel.yama.ptrace_scope 0, or CAP_SYS_PTRACE)");
    return nullptr;
  }
  struct stat st{};
  if (fstat(local, &st) != 0 || st.st_size <= 0) {
    *err = c10::str("fstat of the peer's npu memory file: ", std::strerror(errno));
    close(local);
    return nullptr;
  }
  void* base = mmap(nullptr, size_t(st.st_size), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_NORESERVE, local, 0);
  if (base == MAP_FAILED) {
    *err = c10::str("mmap of the peer's npu memory file (", st.st_size, " bytes): ", std::strerror(errno));
    close(local);
    return nullptr;
  }
  files_[{pid, fd}] = File{local, static_cast<uint8_t*>(base), size_t(st.st_size)};
  return static_cast<uint8_t*>(base);
}

// ------------------------------------------------------------ LocalComm side

void LocalComm::zcPublish(const void* in, int64_t in_bytes, const void* out, int64_t out_bytes, int32_t flags) {
  zc_next_ = ZeroCopyDesc{};
  if (n_ < 2 || in_bytes <= 0 || out_bytes <= 0) return;
  if (!zeroCopyEnabled()) return;
  if (!zc_) zc_ = std::make_shared<ZeroCopy>();
  ZeroCopyDesc d;
  int32_t dev_out = -1, fd_out = -1;
  if (!zeroCopyLocate(in, in_bytes, &d.device, &d.fd, &d.in_off)) return;
  if (!zeroCopyLocate(out, out_bytes, &dev_out, &fd_out, &d.out_off) || fd_out != d.fd) return;
  d.flags = flags;
  zc_next_ = d;
}

bool LocalComm::zcAgree(const Ctx& c) {
  const int par = int(c.seq & 1);
  std::vector<int64_t> key;
  for (int r = 0; r < n_; ++r) {
    const ZeroCopyDesc& d = seg_.ctrl(r).zc[par];
    if (d.fd < 0) return false;
    key.push_back(seg_.ctrl(r).pid.load(std::memory_order_relaxed));
    key.push_back(d.fd);
  }
  if (zc_->refused.count(key)) return false;
  if (zc_->agreed.count(key)) return true;
  // First time these files meet: map the peers' files, then agree in one step.
  std::string err;
  bool ok = true;
  for (int r = 0; r < n_ && ok; ++r) {
    if (r == me_) continue;
    ok = zc_->map(int(key[size_t(2 * r)]), int(key[size_t(2 * r + 1)]), &err) != nullptr;
  }
  seg_.ctrl(me_).zc[par].ok = ok ? 1 : 2;
  step(c);
  bool all = true;
  for (int r = 0; r < n_; ++r) all = all && seg_.ctrl(r).zc[par].ok == 1;
  (all ? zc_->agreed : zc_->refused).insert(key);
  if (!all && !zc_->warned) {
    zc_->warned = true;
    LOG(WARNING) << "hccl: group '" << cfg_.group_name << "': zero-copy collectives are off for these ranks "
                 << "(staged through shared memory instead): "
                 << (ok ? std::string("a peer could not map this rank's npu memory") : err);
  }
  return all;
}

uint8_t* LocalComm::zcPeer(const Ctx& c, int r, bool out) const {
  const ZeroCopyDesc& d = seg_.ctrl(r).zc[c.seq & 1];
  return zc_->mapped(seg_.ctrl(r).pid.load(std::memory_order_relaxed), d.fd) + (out ? d.out_off : d.in_off);
}

// Rank i reduces slice i of every rank's input (rank order) and stores the
// result into slice i of every rank's output in the same pass (each input
// element read once, each output element written once: per rank the traffic
// of one memcpy of the buffer). Slices are disjoint, so in-place buffers are
// safe: slice i of any buffer is read and written by rank i only, each
// element read before it is written.
void LocalComm::zcAllreduce(const Ctx& c, const void* in, void* out, int64_t count, DType dtype, RedOp op) {
  const int64_t es = int64_t(elementSize(dtype));
  constexpr int64_t kAlignElems = 64;  // slices start on cache lines for every dtype
  int64_t per = (count + n_ - 1) / n_;
  per = (per + kAlignElems - 1) / kAlignElems * kAlignElems;
  const int64_t lo = std::min(count, per * me_), hi = std::min(count, lo + per);
  const void* ins[kMaxLocalRanks];
  void* outs[kMaxLocalRanks];
  for (int r = 0; r < n_; ++r) {
    ins[r] = (r == me_ ? static_cast<const uint8_t*>(in) : zcPeer(c, r, false)) + lo * es;
    outs[r] = (r == me_ ? static_cast<uint8_t*>(out) : zcPeer(c, r, true)) + lo * es;
  }
  reduceIntoMany(outs, n_, ins, n_, hi - lo, dtype, op, n_);
  zcDone(c);
}

void LocalComm::zcDone(const Ctx& c) {
  // Every rank has read and written all buffers it touches (a test may break this on purpose).
  if (C10_LIKELY(!g_skip_close.load(std::memory_order_relaxed))) step(c);
  g_zero_copy_count.fetch_add(1, std::memory_order_relaxed);
}

// When every rank's output is one buffer (all_gather_into_tensor), rank i
// writes its input into piece i of every rank's output, a block at a time so
// the input is read from memory once (per rank: read 1/n, write the whole
// output; pulling the n pieces would also read the whole output's worth).
// Otherwise (list outputs) each rank pulls every piece into its own outputs.
// Either way each output piece has one writer and inputs are only read.
void LocalComm::zcAllgather(const Ctx& c, const void* in, void* const* outs, int64_t bytes) {
  const int par = int(c.seq & 1);
  bool push = true;
  for (int r = 0; r < n_; ++r) push = push && (seg_.ctrl(r).zc[par].flags & kZcWholeOutput);
  const auto* src = static_cast<const uint8_t*>(in);
  if (push) {
    uint8_t* dst[kMaxLocalRanks];
    for (int r = 0; r < n_; ++r)
      dst[r] = r == me_ ? static_cast<uint8_t*>(outs[me_]) : zcPeer(c, r, true) + int64_t(me_) * bytes;
    constexpr int64_t kBlock = 64 << 10;  // stays in L2 while it is written n times
    for (int64_t off = 0; off < bytes; off += kBlock) {
      const size_t len = size_t(std::min(kBlock, bytes - off));
      for (int r = 0; r < n_; ++r)
        if (dst[r] != src) std::memcpy(dst[r] + off, src + off, len);
    }
  } else {
    for (int r = 0; r < n_; ++r) {
      const uint8_t* from = r == me_ ? src : zcPeer(c, r, false);
      if (outs[r] != from) std::memcpy(outs[r], from, size_t(bytes));
    }
  }
  zcDone(c);
}

// ins[r] (contiguous, published as ins[0]) holds what rank r receives: rank
// i reduces slice i of every rank's input, in rank order, into its output.
void LocalComm::zcReduceScatter(const Ctx& c, const void* const* ins, void* out, int64_t count, DType dtype, RedOp op) {
  const int64_t es = int64_t(elementSize(dtype));
  const void* ptrs[kMaxLocalRanks];
  for (int r = 0; r < n_; ++r) ptrs[r] = r == me_ ? ins[me_] : zcPeer(c, r, false) + int64_t(me_) * count * es;
  reduceInto(out, ptrs, n_, count, dtype, op, n_);
  zcDone(c);
}

}  // namespace npudist::hccl
