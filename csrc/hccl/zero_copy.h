// Zero-copy collectives within a host (docs/collectives.md, "Zero-copy").
//
// npu memory is a memfd per device (HostDriver), so a rank can read and write
// a peer's npu tensors in place once it has the peer's memory file: it takes
// the descriptor with pidfd_getfd (same user; ptrace rules as for
// /proc/<pid>/fd) and maps the WHOLE file once per (peer, device). A file
// offset never changes meaning while the file exists (the allocator frees by
// punching holes, never by truncating), so a whole-file mapping stays valid
// across the peer's frees, reuses and expandable-segment unmaps: there is
// nothing to invalidate, unlike a cache of per-segment mappings (the design
// an early design note suggested), which would need the peer to announce frees. The
// mapping also keeps the file alive: a peer killed mid-collective leaves its
// memory readable here (no SIGBUS) and the survivors fail with the dead-peer
// error from the step protocol.
//
// Correctness: a collective reads peers' buffers only after every rank has
// arrived (published its buffers) and ends with a step every rank waits for,
// so a rank's Work completes only after all peers finished reading and
// writing its buffers: a free or reuse right after is never seen by a peer.
// Reductions keep the engine's rank order and fp32 accumulation for 16-bit
// types (reduceInto), so results are bitwise identical to the staged path.
//
// NPUDIST_HCCL_ZERO_COPY=0 turns it off (every rank then takes the staged
// path; a rank with it off makes its peers stage too).
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

namespace npudist::hccl {

// NPUDIST_HCCL_ZERO_COPY (default on), read once; setZeroCopyEnabled
// overrides it for this process (benchmarks compare both paths in one run;
// a rank with it off makes its peers take the staged path for that collective).
bool zeroCopyEnabled();
void setZeroCopyEnabled(bool on);

// Tests only: zero-copy collectives skip their closing step (a Work then
// completes before peers finished with its buffers). It exists so that a test
// can show the free/reuse race test fails when the correctness rule above is
// broken; every rank of a group must set the same value.
void setZeroCopySkipClosingStep(bool on);

// Collectives this process ran on the zero-copy path (tests and benchmarks
// check that the path they measure is the one taken).
uint64_t zeroCopyCollectiveCount();

// Locates [p, p+bytes) in this process's npu memory file; false for cpu
// memory and for ranges not backed by one contiguous file extent.
bool zeroCopyLocate(const void* p, int64_t bytes, int32_t* device, int32_t* fd, int64_t* file_offset);

// The peers' memory files this rank has mapped, and which combinations of
// files all ranks agreed on (every rank records the same outcomes).
class ZeroCopy {
 public:
  ZeroCopy() = default;
  ZeroCopy(const ZeroCopy&) = delete;
  ZeroCopy& operator=(const ZeroCopy&) = delete;
  ~ZeroCopy();

  // Base address of the file `fd` of process `pid`, mapped on first use;
  // nullptr with *err set when it cannot be had.
  uint8_t* map(int pid, int fd, std::string* err);
  uint8_t* mapped(int pid, int fd) const;

  std::set<std::vector<int64_t>> agreed, refused;
  bool warned = false;

 private:
  struct File {
    int local_fd = -1;
    uint8_t* base = nullptr;
    size_t size = 0;
  };
  std::map<std::pair<int, int>, File> files_;  // (pid, fd in that process)
};

}  // namespace npudist::hccl
