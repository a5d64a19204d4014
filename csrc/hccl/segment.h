// The shared-memory segment of one communicator (one group, one host) and
// its layout: a header, a control block per rank, per-rank staging slots and
// point-to-point channels. Control words sit in their own cache lines.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>

#include "hccl/shm_wait.h"

namespace npudist::hccl {

constexpr uint64_t kSegmentMagic = 0x6e70756863636c31ULL;  // "npuhccl1"
constexpr int kMaxLocalRanks = 64;
constexpr size_t kNoteBytes = 200;

// What a rank announces when it arrives at a collective (docs/collectives.md, "How it works").
struct OpDesc {
  uint64_t seq;
  uint32_t op;
  uint32_t redop;
  uint32_t dtype;
  uint32_t flags;  // kDescInvalid: this rank failed its own checks (see note)
  int64_t count;
  int64_t root;
  int64_t arrive_ns;  // CLOCK_MONOTONIC, for straggler diagnosis
  int32_t cpu;        // the CPU the rank arrived on: a waiter on the same CPU yields at once (shm_wait.h)
};
constexpr uint32_t kDescInvalid = 1;

// Zero-copy (zero_copy.h): where a rank's buffers for one collective lie in
// its npu memory file, so peers read (and write) them in place. fd < 0: this
// rank's buffers cannot be shared, every rank takes the staged path.
constexpr int32_t kZcWholeOutput = 1;
struct ZeroCopyDesc {
  int32_t fd = -1;  // the memory file's descriptor number in the owner process
  int32_t device = -1;
  int32_t ok = 0;       // agreement step: 1 mapped every peer's file, 2 could not
  int32_t flags = 0;    // kZcWholeOutput: out_off is the whole gathered output (all_gather writes peers' pieces)
  int64_t in_off = -1;  // file offsets of the input and output buffers
  int64_t out_off = -1;
};

// What a peer reads at a step of a collective, in one cache line: the step
// counter it waits on and, right after, the descriptor it compares (one
// cross-core transfer per peer instead of two). By sequence parity, as the
// staging slots: a rank may publish collective k+1 while a slower peer still
// reads k. Steps count every protocol step of this rank; the line of parity p
// holds the last one published by a collective of that parity (every rank
// takes the same steps per collective, so waiting for "reached step s" there
// is waiting for the peer's step s of that collective).
struct alignas(64) ArrivalLine {
  SharedWord step;
  OpDesc desc;
};
static_assert(sizeof(ArrivalLine) == 64, "a rank's step and descriptor share one cache line");

struct RankCtrl {
  ArrivalLine arrival[2];  // by sequence parity
  alignas(64) std::atomic<int32_t> pid;
  int32_t group_rank;
  std::atomic<uint64_t> last_seq_done;
  // The process group's collective sequence numbers this rank has started and
  // completed (collective_seq_id), for desync reports of peers. Written twice
  // per collective: a line of their own, away from what peers poll.
  alignas(64) std::atomic<uint64_t> coll_started;
  std::atomic<uint64_t> coll_done;
  std::atomic<int32_t> coll_started_kind;  // op kind (group_stats.h) of coll_started
  char note[2][kNoteBytes];                // why a descriptor is invalid
  int64_t send_counts[2][kMaxLocalRanks];  // all_to_all: elements to each rank
  int64_t recv_counts[2][kMaxLocalRanks];  // all_to_all: elements from each rank
  ZeroCopyDesc zc[2];                      // by sequence parity (zero_copy.h)
};

struct P2PChunkHeader {
  uint64_t msg;    // message number on this channel
  int64_t total;   // bytes in the whole message
  int64_t offset;  // of this chunk in the message
  int64_t len;
  uint32_t dtype;
  int32_t tag;
};

// One direction between two local ranks: a two-chunk ring.
struct P2PChannel {
  WaitWord produced;  // chunks written by the sender
  WaitWord consumed;  // chunks read by the receiver
  alignas(64) P2PChunkHeader header[2];
};

struct SegmentHeader {
  uint64_t magic;
  uint32_t nranks;
  uint32_t reserved;
  uint64_t slot_bytes;
  uint64_t p2p_chunk_bytes;
  alignas(64) std::atomic<uint32_t> mapped;  // ranks that have mapped the segment
  alignas(64) std::atomic<uint32_t> abort;   // 0, or 1 + the local index of the rank that aborted
  std::atomic<uint32_t> abort_kind;          // FailureKind (local_comm.h) behind the abort
  char abort_reason[256];
};

class Segment {
 public:
  // Creates /dev/shm/<name> (mode 0600, must not exist) and initialises the header.
  static Segment create(const std::string& name, int nranks, size_t slot_bytes, size_t p2p_chunk_bytes);
  // Maps an existing segment made by create().
  static Segment open(const std::string& name, int nranks);
  static void unlinkName(const std::string& name);

  Segment() = default;
  Segment(Segment&& o) noexcept;
  Segment& operator=(Segment&& o) noexcept;
  ~Segment();

  SegmentHeader& header() const { return *reinterpret_cast<SegmentHeader*>(base_); }
  RankCtrl& ctrl(int r) const;
  uint8_t* slot(int r, int buf) const;
  P2PChannel& channel(int src, int dst) const;
  uint8_t* channelData(int src, int dst, int buf) const;
  int nranks() const { return nranks_; }
  size_t slotBytes() const { return slot_bytes_; }
  size_t p2pChunkBytes() const { return p2p_bytes_; }

 private:
  void layout();
  uint8_t* base_ = nullptr;
  size_t size_ = 0;
  int nranks_ = 0;
  size_t slot_bytes_ = 0, p2p_bytes_ = 0;
  size_t ctrl_off_ = 0, slots_off_ = 0, chan_off_ = 0, chan_data_off_ = 0, chan_stride_ = 0;
};

}  // namespace npudist::hccl
