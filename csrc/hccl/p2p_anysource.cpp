// Receiving from any source (`dist.recv(t)` without `src`, c10d's
// recvAnysource), as ProcessGroupGloo supports it.
//
// Design. Point-to-point between local ranks runs over one channel per
// ordered pair (sender -> receiver), each carrying that pair's messages in
// order (local_comm.cpp). The sender of a message does not know whether the
// receiver posted a recv with or without a source, so nothing changes on
// the sending side. An any-source receive polls the head of every incoming
// channel and takes the first channel whose next unread message starts with
// the receive's tag; it then consumes that message exactly as a receive from
// that source would (same message numbering, size and dtype checks, chunking).
// Messages with another tag stay where they are for receives that name their
// source, so an any-source receive never steals a message meant for a
// specific one with a different tag; within one channel order is preserved.
// Peers are polled round robin, starting after the last one served, so a
// chatty peer cannot starve the others. The poll spins briefly, then yields,
// then sleeps 50-500 µs between looks (several words are watched, so there is
// no single futex to sleep on); it fails like other point-to-point waits on
// the deadline, an abort, or a peer process that has exited.
//
// Groups spanning hosts: when every other rank of the group is on another
// host, the receive is Gloo's recvAnysource on the group's Gloo group (remote
// senders use that group). A group with peers both on this host and on others
// cannot wait on both transports at once without a way to withdraw the Gloo
// receive it did not need, so it raises a clear error (docs/collectives.md).
#include <c10/util/Exception.h>

#include <thread>

#include "hccl/engine.h"
#include "hccl/shm_wait.h"

namespace npudist::hccl {

int LocalComm::recvAnySource(uint8_t* data, int64_t bytes, DType dtype, int tag, int64_t deadline_ns) {
  TORCH_CHECK(n_ > 1, "hccl recv from any source: this rank is the only one of its group on this host");
  checkUsable(Op::kBarrier);
  int64_t idle_since = 0, next_probe = 0;
  while (true) {
    for (int k = 0; k < n_; ++k) {
      const int p = (any_source_next_ + k) % n_;
      if (p == me_) continue;
      P2PChannel& ch = seg_.channel(p, me_);
      const uint32_t consumed = recv_chunks_[size_t(p)];
      if (ch.produced.value.load(std::memory_order_acquire) == consumed) continue;  // nothing unread
      // The head chunk of an unread message (receives consume whole messages).
      if (ch.header[consumed & 1].tag != tag) continue;
      any_source_next_ = (p + 1) % n_;
      std::vector<P2POp> ops(1);
      ops[0].is_send = false;
      ops[0].peer = p;
      ops[0].data = data;
      ops[0].bytes = bytes;
      ops[0].dtype = dtype;
      ops[0].tag = tag;
      runP2P(ops, deadline_ns);
      return p;
    }
    const int64_t now = nowNs();
    if (!idle_since) idle_since = now;
    if (seg_.header().abort.load(std::memory_order_acquire)) checkUsable(Op::kBarrier);
    if (deadline_ns && now > deadline_ns) {
      broken_ = c10::str("hccl recv from any source in group '", cfg_.group_name, "' timed out: no rank sent a ",
                         "message with tag ", tag, " to rank ", cfg_.group_ranks[size_t(me_)],
                         " (is a matching send posted?)");
      raise(FailureKind::kTimeout, broken_);
    }
    if (now > next_probe) {
      for (int p = 0; p < n_; ++p) {
        if (p != me_ && !processAlive(seg_.ctrl(p).pid.load())) {
          broken_ = c10::str("hccl recv from any source in group '", cfg_.group_name, "': rank ",
                             cfg_.group_ranks[size_t(p)], " exited while this rank was waiting for a message");
          raise(FailureKind::kPeerDead, broken_);
        }
      }
      next_probe = now + 50'000'000;
    }
    const int64_t idle = now - idle_since;
    if (idle < 5'000) continue;
    if (idle < spinBudgetNs()) {
      std::this_thread::yield();
    } else {
      std::this_thread::sleep_for(std::chrono::microseconds(idle < 5'000'000 ? 50 : 500));
    }
  }
}

int Engine::recvAnySource(at::Tensor& t, int tag) {
  const int others_here = int(topo.local_ranks.size()) - 1;
  if (others_here == topo.size - 1) {
    return topo.local_ranks[size_t(local_->recvAnySource(static_cast<uint8_t*>(t.data_ptr()), int64_t(t.nbytes()),
                                                         toDType(t.scalar_type()), tag, deadline()))];
  }
  if (others_here == 0) {
    std::vector<at::Tensor> bytes{asCpu(t).reshape({-1}).view(at::kByte)};
    auto work = gloo_all_->recvAnysource(bytes, tag);
    glooWait(work);
    return work->sourceRank();
  }
  C10_THROW_ERROR(DistBackendError,
                  c10::str("hccl recv from any source in group '", group_name,
                           "': the group has ranks on this host "
                           "and on other hosts; receiving from any source is supported when all ranks share a "
                           "host or all are on different hosts. Pass src= (docs/collectives.md)"));
}

}  // namespace npudist::hccl
