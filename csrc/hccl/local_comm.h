// The communicator among the ranks of one group on one host: the sequence
// protocol of docs/collectives.md over a shared segment. Every collective takes
// the next sequence number; each rank publishes a descriptor and a step in
// its control block; peers wait on steps, compare descriptors (mismatches
// raise on every rank before data moves) and then move data through the
// per-rank staging slots. Point-to-point uses per-pair channels.
//
// All methods run on one thread at a time per communicator (the comm stream).
#pragma once

#include <torch/csrc/distributed/c10d/Store.hpp>

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "hccl/reduce.h"
#include "hccl/segment.h"

namespace npudist::hccl {

enum class Op : uint32_t {
  kBarrier = 1,
  kBroadcast,
  kAllreduce,
  kReduce,
  kAllgather,
  kReduceScatter,
  kAlltoall,
  kGather,
  kScatter
};
const char* opName(Op op);

// A non-owning reference to a callable (no allocation, unlike
// std::function): what arrive() calls to stage data, during the call only.
class StageFn {
 public:
  StageFn() = default;
  template <typename F>
  StageFn(const F& f) : obj_(&f), call_([](const void* o, int b) { (*static_cast<const F*>(o))(b); }) {}
  explicit operator bool() const { return call_ != nullptr; }
  void operator()(int buf) const { call_(obj_, buf); }

 private:
  const void* obj_ = nullptr;
  void (*call_)(const void*, int) = nullptr;
};

struct LocalCommConfig {
  std::string group_name;        // for messages
  std::vector<int> group_ranks;  // group rank of each local member, ascending
  int my_index = 0;              // my position in group_ranks
  std::string host;              // host identity (NPUDIST_HOSTNAME or hostname)
  size_t slot_bytes = 4 << 20;   // each of a rank's two staging slots
  size_t p2p_chunk_bytes = 512 << 10;
  size_t oneshot_bytes = 64 << 10;  // up to this, collectives take one step
  std::chrono::milliseconds connect_timeout{120000};
};

// Why the last collective failed, for the watchdog (counters, error handling).
enum class FailureKind { kNone, kTimeout, kPeerDead, kAborted, kMismatch, kInvalid, kOther };
const char* failureKindName(FailureKind k);

// A rank's own validation failure, announced to peers so they fail too.
struct Invalid {
  std::string reason;
  explicit operator bool() const { return !reason.empty(); }
};

class LocalComm {
 public:
  // Sets up the segment through `store` (already prefixed for the group):
  // the lowest local rank creates it and publishes its name; everyone maps it;
  // the last to map unlinks the name, so nothing is left in /dev/shm however
  // the processes end.
  LocalComm(const c10::intrusive_ptr<c10d::Store>& store, const std::string& key_prefix, LocalCommConfig cfg);
  ~LocalComm();

  int size() const { return n_; }
  int index() const { return me_; }
  int groupRankOf(int local) const { return cfg_.group_ranks[size_t(local)]; }
  uint64_t lastSeq() const { return seq_; }
  // Non-empty once a timeout, abort or dead peer has broken the protocol.
  const std::string& brokenReason() const { return broken_; }

  // Raises the abort flag: every local rank's pending and later collectives fail.
  // `kind`: why (a timeout here makes the peers' errors timeouts too).
  void abort(const std::string& why, FailureKind kind = FailureKind::kAborted);

  // What the last failure on this communicator was (set before it throws).
  FailureKind lastFailure() const { return last_failure_; }
  void clearFailure() { last_failure_ = FailureKind::kNone; }
  // For failures outside the shared segment (Gloo between hosts).
  void noteFailure(FailureKind k) { last_failure_ = k; }
  // Said in timeout messages: which limit the deadline came from.
  void setTimeoutLabel(std::string label) { timeout_label_ = std::move(label); }

  // The process group's sequence numbers this rank started / completed,
  // published for peers' desync reports (any thread may read them).
  void publishProgress(uint64_t started, uint64_t done, int started_kind);
  struct PeerProgress {
    int group_rank;
    uint64_t started, done;
    int started_kind;
    bool alive;
  };
  std::vector<PeerProgress> peerProgress() const;

  // Straggler scores of the local ranks: a recent-weighted mean of how long
  // each rank kept the others waiting per collective, in seconds (the last
  // to arrive is charged the others' mean wait).
  std::vector<double> stragglerScores() const;

  // Collectives. Counts are in elements of `dtype`; pointers are host
  // addresses (npu memory is host memory). `deadline_ns` bounds every wait.
  void barrier(int64_t deadline_ns, const Invalid& bad = {});
  void broadcast(void* buf, int64_t count, DType dtype, int root, int64_t deadline_ns, const Invalid& bad = {});
  // premul: the PREMUL_SUM factor of this rank (ignored for other ops).
  void allreduce(const void* in, void* out, int64_t count, DType dtype, RedOp op, double premul, int64_t deadline_ns,
                 const Invalid& bad = {});
  // out is written on `root` only.
  void reduce(const void* in, void* out, int64_t count, DType dtype, RedOp op, double premul, int root,
              int64_t deadline_ns, const Invalid& bad = {});
  // outs[r] receives rank r's `count` elements.
  void allgather(const void* in, void* const* outs, int64_t count, DType dtype, int64_t deadline_ns,
                 const Invalid& bad = {});
  // ins[r] holds the `count` elements reduced into rank r's out.
  void reduceScatter(const void* const* ins, void* out, int64_t count, DType dtype, RedOp op, double premul,
                     int64_t deadline_ns, const Invalid& bad = {});
  // sends[r]/send_counts[r]: what goes to rank r; recvs[r]/recv_counts[r]: what comes from r.
  void alltoall(const void* const* sends, const int64_t* send_counts, void* const* recvs, const int64_t* recv_counts,
                DType dtype, int64_t deadline_ns, const Invalid& bad = {});
  // outs (root only): outs[r] receives rank r's count elements.
  void gather(const void* in, void* const* outs, int64_t count, DType dtype, int root, int64_t deadline_ns,
              const Invalid& bad = {});
  // ins (root only): ins[r] is sent to rank r.
  void scatter(const void* const* ins, void* out, int64_t count, DType dtype, int root, int64_t deadline_ns,
               const Invalid& bad = {});

  // Point-to-point between local ranks. A message is a header plus chunks in
  // a two-chunk ring per direction; a send returns once its last chunk is in
  // the ring (it does not wait for the receiver), a receive checks the
  // header against what it expects. A P2POp progresses without blocking so
  // that a batch of sends and receives (batch_isend_irecv) runs concurrently.
  struct P2POp {
    bool is_send = false;
    int peer = 0;  // local index
    uint8_t* data = nullptr;
    int64_t bytes = 0;
    DType dtype = DType::kUInt8;
    int tag = 0;
    // progress state
    bool started = false, done = false;
    uint64_t msg = 0;
    int64_t offset = 0;
    std::string error;
  };
  // Runs the ops to completion together; throws the first error.
  void runP2P(std::vector<P2POp>& ops, int64_t deadline_ns);
  // Receives the next message with `tag` from whichever local peer has one
  // ready (p2p_anysource.cpp); returns the sender's local index.
  int recvAnySource(uint8_t* data, int64_t bytes, DType dtype, int tag, int64_t deadline_ns);

 private:
  struct Ctx {
    Op op;
    uint64_t seq;
    int64_t deadline_ns;
    int64_t start_ns;
  };
  // prefetch_bytes: how much of each peer's staging slot (of this
  // collective's parity) this rank reads right after arriving; its first
  // lines are prefetched once the peers have arrived.
  Ctx arrive(Op op, DType dtype, RedOp redop, int64_t count, int root, int64_t deadline_ns, const Invalid& bad,
             StageFn stage = {}, const int64_t* send_counts = nullptr, const int64_t* recv_counts = nullptr,
             int64_t prefetch_bytes = 0);
  static constexpr int64_t kPrefetchLines = 16;  // the hardware prefetcher streams the rest
  void checkDescriptors(const Ctx& c);
  void step(const Ctx& c);
  void waitAll(uint32_t target, const Ctx& c);
  [[noreturn]] void fail(const Ctx& c, FailureKind kind, const std::string& what);
  void checkUsable(Op op);
  uint8_t* slot(int r, int buf) const { return seg_.slot(r, buf); }
  std::string label(const Ctx& c) const;

  // Zero-copy paths (zero_copy.cpp). zcPublish, before arrive, says where
  // this rank's buffers are; zcAgree, after it, decides for every rank alike
  // whether all can be read in place (mapping peers' files on first use).
  void zcPublish(const void* in, int64_t in_bytes, const void* out, int64_t out_bytes, int32_t flags = 0);
  bool zcPublished() const { return zc_next_.fd >= 0; }
  bool zcAgree(const Ctx& c);
  uint8_t* zcPeer(const Ctx& c, int r, bool out) const;  // peer r's input or output, mapped here
  void zcAllreduce(const Ctx& c, const void* in, void* out, int64_t count, DType dtype, RedOp op);
  void zcAllgather(const Ctx& c, const void* in, void* const* outs, int64_t bytes);
  void zcReduceScatter(const Ctx& c, const void* const* ins, void* out, int64_t count, DType dtype, RedOp op);
  void zcDone(const Ctx& c);  // the closing step: every peer finished with this rank's buffers
  std::shared_ptr<class ZeroCopy> zc_;
  ZeroCopyDesc zc_next_;

  // Parts of the point-to-point engine.
  bool progressP2P(P2POp& op);
  void failP2P(const std::string& what);

  LocalCommConfig cfg_;
  Segment seg_;
  std::string name_;
  int me_ = 0, n_ = 1;
  uint32_t step_ = 0;
  uint64_t seq_ = 0;
  std::string broken_;
  FailureKind last_failure_ = FailureKind::kNone;
  std::string timeout_label_ = "the group's timeout";
  std::unique_ptr<std::atomic<double>[]> straggler_;  // per local rank
  void scoreArrivals(const Ctx& c);
  FailureKind abortKind() const;  // a peer's abort: timeout if it timed out, else aborted
  [[noreturn]] void raise(FailureKind kind, const std::string& msg);
  std::vector<uint64_t> send_msgs_, recv_msgs_;
  std::vector<uint32_t> send_chunks_, recv_chunks_;
  int any_source_next_ = 0;  // where recvAnySource starts looking (round robin)
};

// "[1, 2]": ranks as messages print them.
std::string rankList(const std::vector<int>& ranks);

// The host identity used to decide locality: NPUDIST_HOSTNAME, else gethostname().
std::string hostIdentity();

}  // namespace npudist::hccl
