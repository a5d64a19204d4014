#include "hccl/local_comm.h"

#include <c10/util/Exception.h>
#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <random>
#include <sstream>
#include <thread>

#include "util/env.h"
#include "util/shm_name.h"

namespace npudist::hccl {

const char* opName(Op op) {
  switch (op) {
    case Op::kBarrier:
      return "barrier";
    case Op::kBroadcast:
      return "broadcast";
    case Op::kAllreduce:
      return "all_reduce";
    case Op::kReduce:
      return "reduce";
    case Op::kAllgather:
      return "all_gather";
    case Op::kReduceScatter:
      return "reduce_scatter";
    case Op::kAlltoall:
      return "all_to_all";
    case Op::kGather:
      return "gather";
    case Op::kScatter:
      return "scatter";
  }
  return "?";
}

const char* failureKindName(FailureKind k) {
  switch (k) {
    case FailureKind::kNone:
      return "none";
    case FailureKind::kTimeout:
      return "timeout";
    case FailureKind::kPeerDead:
      return "dead peer";
    case FailureKind::kAborted:
      return "aborted";
    case FailureKind::kMismatch:
      return "mismatch";
    case FailureKind::kInvalid:
      return "invalid input";
    case FailureKind::kOther:
      return "error";
  }
  return "?";
}

std::string hostIdentity() {
  if (auto v = env::raw("NPUDIST_HOSTNAME")) return *v;
  char buf[256] = {0};
  if (gethostname(buf, sizeof(buf) - 1) != 0) return "localhost";
  return buf;
}

namespace {

std::string sanitize(const std::string& s, size_t max_len) {
  std::string out;
  for (char ch : s) {
    bool ok =
        (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') || ch == '.' || ch == '_';
    out += ok ? ch : '_';
    if (out.size() >= max_len) break;
  }
  return out.empty() ? std::string("x") : out;
}

std::string randomToken() {
  std::random_device rd;
  uint64_t v = (uint64_t(rd()) << 32) ^ rd();
  char buf[17];
  std::snprintf(buf, sizeof(buf), "%016llx", static_cast<unsigned long long>(v));
  return buf;
}

std::string toString(const std::vector<uint8_t>& v) { return std::string(v.begin(), v.end()); }
std::vector<uint8_t> toBytes(const std::string& s) { return std::vector<uint8_t>(s.begin(), s.end()); }

}  // namespace

std::string rankList(const std::vector<int>& ranks) {
  std::ostringstream os;
  os << "[";
  for (size_t i = 0; i < ranks.size(); ++i) os << (i ? ", " : "") << ranks[i];
  os << "]";
  return os.str();
}

LocalComm::LocalComm(const c10::intrusive_ptr<c10d::Store>& store, const std::string& key_prefix, LocalCommConfig cfg)
    : cfg_(std::move(cfg)) {
  n_ = int(cfg_.group_ranks.size());
  me_ = cfg_.my_index;
  send_msgs_.assign(size_t(n_), 0);
  recv_msgs_.assign(size_t(n_), 0);
  send_chunks_.assign(size_t(n_), 0);
  recv_chunks_.assign(size_t(n_), 0);
  straggler_.reset(new std::atomic<double>[size_t(n_)]);
  for (int r = 0; r < n_; ++r) straggler_[size_t(r)].store(0.0);
  const std::string name_key = key_prefix + "/segment";
  const auto timeout = cfg_.connect_timeout;
  if (me_ == 0) {
    // One naming rule with npurun's cleanup (util/shm_name.h).
    name_ = "/" + shm::jobPrefix(env::getString("NPUDIST_JOB_TAG", "")) + sanitize(cfg_.host, 48) + "-" + randomToken();
    seg_ = Segment::create(name_, n_, cfg_.slot_bytes, cfg_.p2p_chunk_bytes);
    store->set(name_key, toBytes(name_));
  } else {
    try {
      store->wait({name_key}, timeout);
    } catch (const std::exception& e) {
      C10_THROW_ERROR(
          DistBackendError,
          c10::str("hccl: communicator setup for group '", cfg_.group_name, "' timed out after ",
                   timeout.count() / 1000.0, " s (HCCL_CONNECT_TIMEOUT): local rank ", cfg_.group_ranks[0],
                   " never published the shared segment (did it call init_process_group/new_group?): ", e.what()));
    }
    name_ = toString(store->get(name_key));
    seg_ = Segment::open(name_, n_);
  }
  RankCtrl& mine = seg_.ctrl(me_);
  mine.pid.store(int32_t(getpid()), std::memory_order_release);
  mine.group_rank = cfg_.group_ranks[size_t(me_)];
  if (seg_.header().mapped.fetch_add(1, std::memory_order_acq_rel) + 1 == uint32_t(n_)) {
    Segment::unlinkName(name_);  // everyone has it mapped: the memory lives on, the name goes
  }
  // Wait until every local rank has mapped it, so setup errors surface here.
  const int64_t deadline = nowNs() + int64_t(timeout.count()) * 1000000;
  while (seg_.header().mapped.load(std::memory_order_acquire) < uint32_t(n_)) {
    if (nowNs() > deadline) {
      Segment::unlinkName(name_);
      std::vector<int> missing;
      for (int r = 0; r < n_; ++r)
        if (seg_.ctrl(r).pid.load() == 0) missing.push_back(cfg_.group_ranks[size_t(r)]);
      C10_THROW_ERROR(DistBackendError,
                      c10::str("hccl: communicator setup for group '", cfg_.group_name, "' timed out after ",
                               timeout.count() / 1000.0, " s (HCCL_CONNECT_TIMEOUT): ranks ", rankList(missing),
                               " on host '", cfg_.host, "' did not join"));
    }
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
}

LocalComm::~LocalComm() = default;

void LocalComm::abort(const std::string& why, FailureKind kind) {
  SegmentHeader& h = seg_.header();
  uint32_t expected = 0;
  // The reason and kind are written before the flag is raised... by this
  // rank only; readers use them once the flag is up.
  if (h.abort.load() == 0) {
    std::snprintf(h.abort_reason, sizeof(h.abort_reason), "%s", why.c_str());
    h.abort_kind.store(uint32_t(kind), std::memory_order_release);
  }
  h.abort.compare_exchange_strong(expected, uint32_t(me_ + 1));
  // Wake whoever sleeps on any word of this segment.
  for (int r = 0; r < n_; ++r) {
    for (ArrivalLine& line : seg_.ctrl(r).arrival) publish(line.step, line.step.value.load());
    for (int d = 0; d < n_; ++d) {
      P2PChannel& ch = seg_.channel(r, d);
      publish(ch.produced, ch.produced.value.load());
      publish(ch.consumed, ch.consumed.value.load());
    }
  }
  if (broken_.empty()) broken_ = "the communicator was aborted: " + why;
}

void LocalComm::raise(FailureKind kind, const std::string& msg) {
  last_failure_ = kind;
  C10_THROW_ERROR(DistBackendError, msg);
}

FailureKind LocalComm::abortKind() const {
  return FailureKind(seg_.header().abort_kind.load(std::memory_order_acquire)) == FailureKind::kTimeout
             ? FailureKind::kTimeout
             : FailureKind::kAborted;
}

void LocalComm::publishProgress(uint64_t started, uint64_t done, int started_kind) {
  RankCtrl& mine = seg_.ctrl(me_);
  mine.coll_started_kind.store(started_kind, std::memory_order_relaxed);
  mine.coll_started.store(started, std::memory_order_release);
  mine.coll_done.store(done, std::memory_order_release);
}

std::vector<LocalComm::PeerProgress> LocalComm::peerProgress() const {
  std::vector<PeerProgress> out;
  for (int r = 0; r < n_; ++r) {
    const RankCtrl& c = seg_.ctrl(r);
    out.push_back({cfg_.group_ranks[size_t(r)], c.coll_started.load(std::memory_order_acquire),
                   c.coll_done.load(std::memory_order_acquire), c.coll_started_kind.load(std::memory_order_relaxed),
                   r == me_ || processAlive(c.pid.load())});
  }
  return out;
}

std::vector<double> LocalComm::stragglerScores() const {
  std::vector<double> out;
  for (int r = 0; r < n_; ++r) out.push_back(straggler_[size_t(r)].load(std::memory_order_relaxed));
  return out;
}

// Everyone has arrived at c.seq: charge the last to arrive with the others'
// mean wait. Every local rank computes the same scores from the same data.
void LocalComm::scoreArrivals(const Ctx& c) {
  if (n_ < 2) return;
  const int par = int(c.seq & 1);
  int last = 0;
  int64_t latest = INT64_MIN, sum = 0;
  for (int r = 0; r < n_; ++r) {
    const int64_t t = seg_.ctrl(r).arrival[par].desc.arrive_ns;
    sum += t;
    if (t > latest) latest = t, last = r;
  }
  const double waited = double(latest * (n_ - 1) - (sum - latest)) / (n_ - 1) / 1e9;
  constexpr double kWeight = 0.05;  // about the last 20 collectives
  for (int r = 0; r < n_; ++r) {
    auto& s = straggler_[size_t(r)];
    s.store(s.load(std::memory_order_relaxed) * (1 - kWeight) + (r == last ? waited * kWeight : 0.0),
            std::memory_order_relaxed);
  }
}

std::string LocalComm::label(const Ctx& c) const {
  return c10::str("hccl ", opName(c.op), " #", c.seq, " in group '", cfg_.group_name, "'");
}

void LocalComm::checkUsable(Op op) {
  if (!broken_.empty()) {
    raise(FailureKind::kAborted, c10::str("hccl ", opName(op), " in group '", cfg_.group_name,
                                          "': the communicator is unusable after an earlier failure (", broken_,
                                          "); destroy the process group and create a new one"));
  }
  uint32_t a = seg_.header().abort.load(std::memory_order_acquire);
  if (a) {
    broken_ =
        c10::str("rank ", cfg_.group_ranks[size_t(a - 1)], " aborted the communicator: ", seg_.header().abort_reason);
    checkUsable(op);
  }
}

void LocalComm::fail(const Ctx& c, FailureKind kind, const std::string& what) {
  const std::string why = label(c) + ": " + what;
  // Peers that arrive late must not complete this collective with our data
  // (or wait for us): the abort flag fails their collectives at once.
  abort(c10::str("rank ", cfg_.group_ranks[size_t(me_)], " gave up: ", why), kind);
  broken_ = why;
  raise(kind, broken_);
}

void LocalComm::waitAll(uint32_t target, const Ctx& c) {
  const int par = int(c.seq & 1);
  for (int r = 0; r < n_; ++r) {
    if (r == me_) continue;
    RankCtrl& peer = seg_.ctrl(r);
    SharedWord& word = peer.arrival[par].step;
    // The peer is often there already: no wait policy to build then.
    if (reached(word.value.load(std::memory_order_acquire), target)) continue;
    WaitPolicy policy;
    policy.deadline_ns = c.deadline_ns;
    policy.abort_flag = &seg_.header().abort;
    const int pid = peer.pid.load(std::memory_order_acquire);
    policy.peer_alive = [pid] { return processAlive(pid); };
    policy.peer_on_my_cpu = peer.arrival[par].desc.cpu == sched_getcpu();
    WaitResult res = waitUntil(word, [target](uint32_t v) { return reached(v, target); }, policy);
    if (res == WaitResult::kReady) continue;
    if (res == WaitResult::kAborted) {
      uint32_t a = seg_.header().abort.load();
      fail(c, abortKind(),
           c10::str("aborted by rank ", cfg_.group_ranks[size_t(a - 1)], ": ", seg_.header().abort_reason));
    }
    // Say who has not arrived (or finished), for the user and the watchdog.
    std::vector<int> behind, dead;
    for (int q = 0; q < n_; ++q) {
      if (q == me_) continue;
      if (reached(seg_.ctrl(q).arrival[par].step.value.load(), target)) continue;
      behind.push_back(cfg_.group_ranks[size_t(q)]);
      if (!processAlive(seg_.ctrl(q).pid.load())) dead.push_back(cfg_.group_ranks[size_t(q)]);
    }
    if (res == WaitResult::kPeerDead || !dead.empty()) {
      fail(c, FailureKind::kPeerDead,
           c10::str("rank(s) ", rankList(dead), " exited while this collective was in progress"));
    }
    // A rank whose descriptor for this sequence number is up has joined.
    std::vector<int> absent, unfinished;
    for (int q : std::vector<int>(behind.begin(), behind.end())) {
      const int li = int(std::find(cfg_.group_ranks.begin(), cfg_.group_ranks.end(), q) - cfg_.group_ranks.begin());
      (seg_.ctrl(li).arrival[par].desc.seq == c.seq ? unfinished : absent).push_back(q);
    }
    std::ostringstream os;
    os << "timed out after " << double(nowNs() - c.start_ns) / 1e9 << " s (" << timeout_label_ << ")";
    if (!absent.empty()) os << "; rank(s) " << rankList(absent) << " never joined it";
    if (!unfinished.empty()) os << "; rank(s) " << rankList(unfinished) << " joined but did not finish it";
    os << " (last collective of each:";
    for (int q = 0; q < n_; ++q) {
      if (q == me_ || reached(seg_.ctrl(q).arrival[par].step.value.load(), target)) continue;
      const RankCtrl& rc = seg_.ctrl(q);
      uint64_t last = std::max(rc.arrival[0].desc.seq, rc.arrival[1].desc.seq);
      const OpDesc& d = rc.arrival[last & 1].desc;
      os << " rank " << cfg_.group_ranks[size_t(q)] << " at #" << last << " " << (last ? opName(Op(d.op)) : "none");
    }
    os << ")";
    fail(c, FailureKind::kTimeout, os.str());
  }
}

void LocalComm::step(const Ctx& c) {
  ++step_;
  publish(seg_.ctrl(me_).arrival[c.seq & 1].step, step_);
  waitAll(step_, c);
  // A peer that gave up (timeout, dead rank) may have arrived before it did.
  if (uint32_t a = seg_.header().abort.load(std::memory_order_acquire)) {
    fail(c, abortKind(),
         c10::str("aborted by rank ", cfg_.group_ranks[size_t(a - 1)], ": ", seg_.header().abort_reason));
  }
}

LocalComm::Ctx LocalComm::arrive(Op op, DType dtype, RedOp redop, int64_t count, int root, int64_t deadline_ns,
                                 const Invalid& bad, StageFn stage, const int64_t* send_counts,
                                 const int64_t* recv_counts, int64_t prefetch_bytes) {
  checkUsable(op);
  const int64_t now = nowNs();  // one clock read: the collective's start and its arrival time
  Ctx c{op, ++seq_, deadline_ns, now};
  const int par = int(c.seq & 1);
  RankCtrl& mine = seg_.ctrl(me_);
  if (stage && !bad) stage(par);
  if (send_counts) {
    std::memcpy(mine.send_counts[par], send_counts, sizeof(int64_t) * size_t(n_));
    std::memcpy(mine.recv_counts[par], recv_counts, sizeof(int64_t) * size_t(n_));
  }
  OpDesc& d = mine.arrival[par].desc;
  d.op = uint32_t(op);
  d.redop = uint32_t(redop);
  d.dtype = uint32_t(dtype);
  d.flags = bad ? kDescInvalid : 0;
  d.count = count;
  d.root = root;
  d.arrive_ns = now;
  d.cpu = sched_getcpu();
  if (bad) std::snprintf(mine.note[par], kNoteBytes, "%s", bad.reason.c_str());
  mine.zc[par] = bad ? ZeroCopyDesc{} : zc_next_;  // zero-copy buffers, if zcPublish found them
  zc_next_ = ZeroCopyDesc{};
  d.seq = c.seq;
  step(c);
  // The peers' staged data is ready: start fetching its first lines from the
  // other cores while the descriptors are compared (the reduction reads it next).
  if (prefetch_bytes > 0 && !bad) {
    const int64_t lines = std::min<int64_t>((prefetch_bytes + 63) / 64, kPrefetchLines);
    for (int r = 0; r < n_; ++r) {
      if (r == me_) continue;
      const uint8_t* p = slot(r, par);
      for (int64_t l = 0; l < lines; ++l) __builtin_prefetch(p + l * 64, 0, 3);
    }
  }
  checkDescriptors(c);
  scoreArrivals(c);
  return c;
}

void LocalComm::checkDescriptors(const Ctx& c) {
  const int par = int(c.seq & 1);
  for (int r = 0; r < n_; ++r) {
    const OpDesc& d = seg_.ctrl(r).arrival[par].desc;
    if (d.seq != c.seq) {
      fail(c, FailureKind::kMismatch,
           c10::str("rank ", cfg_.group_ranks[size_t(r)], " is at collective #", d.seq, " (protocol desynchronised)"));
    }
  }
  // A rank that failed its own checks makes everyone fail, with its reason.
  for (int r = 0; r < n_; ++r) {
    if (seg_.ctrl(r).arrival[par].desc.flags & kDescInvalid) {
      raise(FailureKind::kInvalid, c10::str(label(c), ": rank ", cfg_.group_ranks[size_t(r)],
                                            " passed invalid input: ", seg_.ctrl(r).note[par], " (no data was moved)"));
    }
  }
  const OpDesc& ref = seg_.ctrl(0).arrival[par].desc;
  const int ref_rank = cfg_.group_ranks[0];
  auto mismatch = [&](int r, const std::string& field, const std::string& mine, const std::string& theirs,
                      const std::string& hint) {
    raise(FailureKind::kMismatch,
          c10::str(label(c), ": ranks disagree before any data moved: rank ", cfg_.group_ranks[size_t(r)], " has ",
                   field, "=", mine, " but rank ", ref_rank, " has ", field, "=", theirs, " (", hint, ")"));
  };
  const Op op = Op(ref.op);
  for (int r = 1; r < n_; ++r) {
    const OpDesc& d = seg_.ctrl(r).arrival[par].desc;
    if (d.op != ref.op) {
      mismatch(r, "collective", opName(Op(d.op)), opName(op),
               "every rank must call the same collectives in the same order");
    }
    if (d.dtype != ref.dtype) {
      mismatch(r, "dtype", dtypeName(DType(d.dtype)), dtypeName(DType(ref.dtype)),
               "tensors must have the same dtype on every rank");
    }
    const bool reducing = op == Op::kAllreduce || op == Op::kReduce || op == Op::kReduceScatter;
    if (reducing && d.redop != ref.redop) {
      mismatch(r, "reduce op", redopName(RedOp(d.redop)), redopName(RedOp(ref.redop)),
               "every rank must pass the same ReduceOp");
    }
    const bool counted = op != Op::kBarrier && op != Op::kAlltoall;
    if (counted && d.count != ref.count) {
      mismatch(r, "count", std::to_string(d.count), std::to_string(ref.count),
               "tensor sizes must match across ranks for this collective");
    }
    const bool rooted = op == Op::kBroadcast || op == Op::kReduce || op == Op::kGather || op == Op::kScatter;
    if (rooted && d.root != ref.root) {
      mismatch(r, "root", std::to_string(cfg_.group_ranks[size_t(d.root)]),
               std::to_string(cfg_.group_ranks[size_t(ref.root)]), "every rank must pass the same src/dst");
    }
  }
  if (op == Op::kAlltoall) {
    for (int i = 0; i < n_; ++i) {
      for (int j = 0; j < n_; ++j) {
        int64_t sent = seg_.ctrl(i).send_counts[par][j];
        int64_t expected = seg_.ctrl(j).recv_counts[par][i];
        if (sent != expected) {
          raise(FailureKind::kMismatch,
                c10::str(label(c), ": ranks disagree before any data moved: rank ", cfg_.group_ranks[size_t(i)],
                         " sends ", sent, " elements to rank ", cfg_.group_ranks[size_t(j)], " but rank ",
                         cfg_.group_ranks[size_t(j)], " expects ", expected, " from rank ", cfg_.group_ranks[size_t(i)],
                         " (input_split_sizes and output_split_sizes must agree)"));
        }
      }
    }
  }
}

// ------------------------------------------------------------ point-to-point

bool LocalComm::progressP2P(P2POp& op) {
  if (op.done) return false;
  const int64_t chunk = int64_t(seg_.p2pChunkBytes());
  if (op.is_send) {
    P2PChannel& ch = seg_.channel(me_, op.peer);
    if (!op.started) {
      op.started = true;
      op.msg = ++send_msgs_[size_t(op.peer)];
    }
    bool progressed = false;
    while (!op.done) {
      uint32_t produced = send_chunks_[size_t(op.peer)];
      uint32_t consumed = ch.consumed.value.load(std::memory_order_acquire);
      if (produced - consumed >= 2) break;  // ring full
      const int buf = int(produced & 1);
      const int64_t len = std::min(chunk, op.bytes - op.offset);
      P2PChunkHeader& h = ch.header[buf];
      h.msg = op.msg;
      h.total = op.bytes;
      h.offset = op.offset;
      h.len = len;
      h.dtype = uint32_t(op.dtype);
      h.tag = op.tag;
      if (len > 0) std::memcpy(seg_.channelData(me_, op.peer, buf), op.data + op.offset, size_t(len));
      op.offset += len;
      send_chunks_[size_t(op.peer)] = produced + 1;
      publish(ch.produced, produced + 1);
      progressed = true;
      if (op.offset >= op.bytes) op.done = true;
    }
    return progressed;
  }
  P2PChannel& ch = seg_.channel(op.peer, me_);
  if (!op.started) {
    op.started = true;
    op.msg = ++recv_msgs_[size_t(op.peer)];
  }
  bool progressed = false;
  while (!op.done) {
    uint32_t consumed = recv_chunks_[size_t(op.peer)];
    if (ch.produced.value.load(std::memory_order_acquire) == consumed) break;  // nothing new
    const int buf = int(consumed & 1);
    const P2PChunkHeader h = ch.header[buf];
    if (h.offset == 0 && op.error.empty()) {
      if (h.msg != op.msg) {
        op.error = c10::str("message #", h.msg, " from rank ", cfg_.group_ranks[size_t(op.peer)], " arrived while #",
                            op.msg, " was expected (protocol desynchronised)");
      } else if (h.total != op.bytes || h.dtype != uint32_t(op.dtype)) {
        op.error = c10::str("rank ", cfg_.group_ranks[size_t(op.peer)], " sent ",
                            h.total / int64_t(elementSize(DType(h.dtype))), " ", dtypeName(DType(h.dtype)),
                            " elements but this rank expects ", op.bytes / int64_t(elementSize(op.dtype)), " ",
                            dtypeName(op.dtype), " (send and recv tensors must have the same size and dtype)");
      }
    }
    if (op.error.empty() && h.len > 0) {
      std::memcpy(op.data + h.offset, seg_.channelData(op.peer, me_, buf), size_t(h.len));
    }
    recv_chunks_[size_t(op.peer)] = consumed + 1;
    publish(ch.consumed, consumed + 1);
    progressed = true;
    if (h.offset + h.len >= h.total) op.done = true;  // the sender's message ends here
  }
  return progressed;
}

void LocalComm::runP2P(std::vector<P2POp>& ops, int64_t deadline_ns) {
  if (!broken_.empty() || seg_.header().abort.load()) checkUsable(Op::kBarrier);
  int64_t idle_since = 0;
  int64_t next_probe = 0;
  while (true) {
    bool progressed = false, all_done = true;
    for (P2POp& op : ops) {
      progressed |= progressP2P(op);
      all_done &= op.done;
    }
    if (all_done) break;
    if (progressed) {
      idle_since = 0;
      continue;
    }
    const int64_t now = nowNs();
    if (!idle_since) idle_since = now;
    if (seg_.header().abort.load(std::memory_order_acquire)) {
      checkUsable(Op::kBarrier);
    }
    const int64_t idle = now - idle_since;
    if (idle < 5'000) continue;
    if (deadline_ns && now > deadline_ns) {
      std::vector<int> peers;
      for (const P2POp& op : ops)
        if (!op.done) peers.push_back(cfg_.group_ranks[size_t(op.peer)]);
      broken_ = c10::str("hccl send/recv in group '", cfg_.group_name, "' timed out waiting for rank(s) ",
                         rankList(peers), " (is the matching recv/send posted?)");
      raise(FailureKind::kTimeout, broken_);
    }
    if (now > next_probe) {
      for (const P2POp& op : ops) {
        if (!op.done && !processAlive(seg_.ctrl(op.peer).pid.load())) {
          broken_ = c10::str("hccl send/recv in group '", cfg_.group_name, "': rank ",
                             cfg_.group_ranks[size_t(op.peer)], " exited before the transfer completed");
          raise(FailureKind::kPeerDead, broken_);
        }
      }
      next_probe = now + 50'000'000;
    }
    if (idle < spinBudgetNs()) {
      std::this_thread::yield();
    } else {
      // Several words may be pending: sleep briefly rather than on one futex.
      std::this_thread::sleep_for(std::chrono::microseconds(idle < 5'000'000 ? 50 : 500));
    }
  }
  for (const P2POp& op : ops) {
    if (!op.error.empty()) raise(FailureKind::kMismatch, "hccl recv in group '" + cfg_.group_name + "': " + op.error);
  }
}

}  // namespace npudist::hccl
