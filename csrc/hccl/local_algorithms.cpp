// The collectives of LocalComm (protocol in local_comm.cpp). Small messages
// take one step: each rank stages its data, then arrives, then reads its
// peers' slots. Larger ones arrive first, then move data in rounds through
// the two staging slots (a round's write never touches a slot a peer may
// still read: every round ends with a step all ranks wait for), then take a
// closing step so the next collective may reuse the slots at once.
#include <c10/util/Exception.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "hccl/local_comm.h"

namespace npudist::hccl {
namespace {

constexpr size_t kAlign = 64;

int64_t alignDown(int64_t v, int64_t a) { return v / a * a; }

// Copies `count` elements into a staging slot, applying this rank's
// PREMUL_SUM factor on the way.
void stage(void* dst, const void* src, int64_t count, DType dtype, RedOp op, double premul) {
  if (op == RedOp::kPremulSum) {
    scaleCopy(dst, src, count, dtype, premul);
  } else if (count > 0 && dst != src) {
    std::memcpy(dst, src, size_t(count) * elementSize(dtype));
  }
}

// Splits [0, len) into n near-equal parts; part i is [lo, hi).
void slice(int64_t len, int n, int i, int64_t* lo, int64_t* hi) {
  int64_t base = len / n, extra = len % n;
  *lo = i * base + std::min<int64_t>(i, extra);
  *hi = *lo + base + (i < extra ? 1 : 0);
}

}  // namespace

void LocalComm::barrier(int64_t deadline_ns, const Invalid& bad) {
  arrive(Op::kBarrier, DType::kUInt8, RedOp::kSum, 0, 0, deadline_ns, bad);
}

void LocalComm::broadcast(void* buf, int64_t count, DType dtype, int root, int64_t deadline_ns, const Invalid& bad) {
  const size_t es = elementSize(dtype);
  const int64_t bytes = count * int64_t(es);
  auto* data = static_cast<uint8_t*>(buf);
  if (bytes <= int64_t(cfg_.oneshot_bytes)) {
    Ctx c = arrive(Op::kBroadcast, dtype, RedOp::kSum, count, root, deadline_ns, bad, [&](int b) {
      if (me_ == root && bytes) std::memcpy(slot(me_, b), data, size_t(bytes));
    });
    if (me_ != root && bytes) std::memcpy(data, slot(root, int(c.seq & 1)), size_t(bytes));
    return;
  }
  zcPublish(buf, bytes, buf, bytes);  // zero-copy: peers copy straight from the root's buffer
  Ctx c = arrive(Op::kBroadcast, dtype, RedOp::kSum, count, root, deadline_ns, bad);
  if (zcAgree(c)) {
    if (me_ != root) std::memcpy(data, zcPeer(c, root, false), size_t(bytes));
    return zcDone(c);
  }
  const int64_t chunk = alignDown(int64_t(seg_.slotBytes()), int64_t(kAlign));
  int k = 0;
  for (int64_t off = 0; off < bytes; off += chunk, ++k) {
    const int64_t len = std::min(chunk, bytes - off);
    if (me_ == root) std::memcpy(slot(me_, k & 1), data + off, size_t(len));
    step(c);
    if (me_ != root) std::memcpy(data + off, slot(root, k & 1), size_t(len));
  }
  step(c);
}

void LocalComm::allreduce(const void* in, void* out, int64_t count, DType dtype, RedOp op, double premul,
                          int64_t deadline_ns, const Invalid& bad) {
  reduce(in, out, count, dtype, op, premul, /*root=*/-1, deadline_ns, bad);
}

// root == -1: every rank receives the result (all_reduce).
void LocalComm::reduce(const void* in, void* out, int64_t count, DType dtype, RedOp op, double premul, int root,
                       int64_t deadline_ns, const Invalid& bad) {
  const Op kind = root < 0 ? Op::kAllreduce : Op::kReduce;
  const bool receives = root < 0 || root == me_;
  const size_t es = elementSize(dtype);
  const int64_t bytes = count * int64_t(es);
  const void* ptrs[kMaxLocalRanks];
  if (bytes <= int64_t(cfg_.oneshot_bytes)) {
    Ctx c = arrive(
        kind, dtype, op, count, root, deadline_ns, bad,
        [&](int b) { stage(slot(me_, b), in, count, dtype, op, premul); }, nullptr, nullptr, receives ? bytes : 0);
    if (receives) {
      for (int r = 0; r < n_; ++r) ptrs[size_t(r)] = slot(r, int(c.seq & 1));
      reduceInto(out, ptrs, n_, count, dtype, op, n_);
    }
    return;
  }
  // Zero-copy (zero_copy.cpp): all_reduce with npu buffers on every rank.
  // PREMUL_SUM stays staged (the factor is applied while staging).
  if (root < 0 && op != RedOp::kPremulSum) zcPublish(in, bytes, out, bytes);
  Ctx c = arrive(kind, dtype, op, count, root, deadline_ns, bad);
  if (root < 0 && zcAgree(c)) return zcAllreduce(c, in, out, count, dtype, op);
  // Reduce-scatter then all-gather per chunk: each rank reduces only its
  // 1/n slice, in place in its own slot, then reads everyone's slices.
  const int64_t chunk = alignDown(int64_t(seg_.slotBytes()) / int64_t(es), int64_t(kAlign));
  const auto* src = static_cast<const uint8_t*>(in);
  auto* dst = static_cast<uint8_t*>(out);
  int k = 0;
  // Peers never read this rank's own slice from its slot, so (unless it must
  // be scaled for PREMUL_SUM) it is reduced straight from the input.
  const bool stage_own = op == RedOp::kPremulSum;
  for (int64_t start = 0; start < count; start += chunk, ++k) {
    const int64_t len = std::min(chunk, count - start);
    const int b = k & 1;
    int64_t lo, hi;
    for (int r = 0; r < n_; ++r) {
      if (r == me_ && !stage_own) continue;
      slice(len, n_, r, &lo, &hi);
      stage(slot(me_, b) + lo * int64_t(es), src + (start + lo) * int64_t(es), hi - lo, dtype, op, premul);
    }
    step(c);
    slice(len, n_, me_, &lo, &hi);
    if (hi > lo) {
      for (int r = 0; r < n_; ++r) ptrs[size_t(r)] = slot(r, b) + lo * int64_t(es);
      if (!stage_own) ptrs[size_t(me_)] = src + (start + lo) * int64_t(es);
      // Straight into this rank's output too (it is read only by this rank).
      reduceInto(slot(me_, b) + lo * int64_t(es), ptrs, n_, hi - lo, dtype, op, n_);
    }
    step(c);
    if (receives) {
      for (int r = 0; r < n_; ++r) {
        slice(len, n_, r, &lo, &hi);
        if (hi > lo) std::memcpy(dst + (start + lo) * int64_t(es), slot(r, b) + lo * int64_t(es), size_t(hi - lo) * es);
      }
    }
  }
  step(c);
}

void LocalComm::allgather(const void* in, void* const* outs, int64_t count, DType dtype, int64_t deadline_ns,
                          const Invalid& bad) {
  gather(in, outs, count, dtype, /*root=*/-1, deadline_ns, bad);
}

// root == -1: every rank receives (all_gather).
void LocalComm::gather(const void* in, void* const* outs, int64_t count, DType dtype, int root, int64_t deadline_ns,
                       const Invalid& bad) {
  const Op kind = root < 0 ? Op::kAllgather : Op::kGather;
  const bool receives = root < 0 || root == me_;
  const int64_t bytes = count * int64_t(elementSize(dtype));
  const auto* src = static_cast<const uint8_t*>(in);
  auto copy_out = [&](int b, int64_t off, int64_t len) {
    if (!receives || len <= 0) return;
    for (int r = 0; r < n_; ++r) {
      const uint8_t* from = r == me_ ? src + off : slot(r, b);
      std::memcpy(static_cast<uint8_t*>(outs[r]) + off, from, size_t(len));
    }
  };
  if (bytes <= int64_t(cfg_.oneshot_bytes)) {
    Ctx c = arrive(
        kind, dtype, RedOp::kSum, count, root, deadline_ns, bad,
        [&](int b) {
          if (bytes) std::memcpy(slot(me_, b), src, size_t(bytes));
        },
        nullptr, nullptr, receives ? bytes : 0);
    copy_out(int(c.seq & 1), 0, bytes);
    return;
  }
  if (root < 0) {  // zero-copy all_gather (zero_copy.cpp): one output buffer is written in place by every rank
    bool whole = true;
    for (int r = 1; r < n_ && whole; ++r) whole = outs[r] == static_cast<uint8_t*>(outs[0]) + r * bytes;
    if (whole) zcPublish(in, bytes, outs[0], bytes * n_, kZcWholeOutput);
    if (!whole || !zcPublished()) zcPublish(in, bytes, in, bytes);  // peers pull from the input
  }
  Ctx c = arrive(kind, dtype, RedOp::kSum, count, root, deadline_ns, bad);
  if (root < 0 && zcAgree(c)) return zcAllgather(c, in, outs, bytes);
  const int64_t chunk = alignDown(int64_t(seg_.slotBytes()), int64_t(kAlign));
  int k = 0;
  for (int64_t off = 0; off < bytes; off += chunk, ++k) {
    const int64_t len = std::min(chunk, bytes - off);
    std::memcpy(slot(me_, k & 1), src + off, size_t(len));
    step(c);
    copy_out(k & 1, off, len);
  }
  step(c);
}

void LocalComm::reduceScatter(const void* const* ins, void* out, int64_t count, DType dtype, RedOp op, double premul,
                              int64_t deadline_ns, const Invalid& bad) {
  const int64_t es = int64_t(elementSize(dtype));
  const void* ptrs[kMaxLocalRanks];
  // Each round stages n pieces (one per destination) at a fixed stride.
  int64_t piece = alignDown(int64_t(seg_.slotBytes()) / n_, int64_t(kAlign)) / es;
  const bool oneshot = count * es * n_ <= int64_t(cfg_.oneshot_bytes);
  if (oneshot) piece = count;
  const int64_t stride = (piece * es + int64_t(kAlign) - 1) / int64_t(kAlign) * int64_t(kAlign);
  auto write = [&](int b, int64_t start, int64_t len) {
    for (int r = 0; r < n_; ++r)
      stage(slot(me_, b) + r * stride, static_cast<const uint8_t*>(ins[r]) + start * es, len, dtype, op, premul);
  };
  auto read = [&](int b, int64_t start, int64_t len) {
    for (int r = 0; r < n_; ++r) ptrs[size_t(r)] = slot(r, b) + me_ * stride;
    reduceInto(static_cast<uint8_t*>(out) + start * es, ptrs, n_, len, dtype, op, n_);
  };
  if (oneshot) {
    Ctx c = arrive(Op::kReduceScatter, dtype, op, count, 0, deadline_ns, bad, [&](int b) { write(b, 0, count); });
    read(int(c.seq & 1), 0, count);
    return;
  }
  // Zero-copy when the n inputs are one contiguous buffer (reduce_scatter_tensor).
  bool contiguous = op != RedOp::kPremulSum;
  for (int r = 1; r < n_ && contiguous; ++r)
    contiguous = ins[r] == static_cast<const uint8_t*>(ins[0]) + r * count * es;
  if (contiguous) zcPublish(ins[0], count * es * n_, out, count * es);
  Ctx c = arrive(Op::kReduceScatter, dtype, op, count, 0, deadline_ns, bad);
  if (contiguous && zcAgree(c)) return zcReduceScatter(c, ins, out, count, dtype, op);
  int k = 0;
  for (int64_t start = 0; start < count; start += piece, ++k) {
    const int64_t len = std::min(piece, count - start);
    write(k & 1, start, len);
    step(c);
    read(k & 1, start, len);
  }
  step(c);
}

void LocalComm::scatter(const void* const* ins, void* out, int64_t count, DType dtype, int root, int64_t deadline_ns,
                        const Invalid& bad) {
  const int64_t bytes = count * int64_t(elementSize(dtype));
  auto* dst = static_cast<uint8_t*>(out);
  int64_t piece = alignDown(int64_t(seg_.slotBytes()) / n_, int64_t(kAlign));
  const bool oneshot = bytes * n_ <= int64_t(cfg_.oneshot_bytes);
  if (oneshot) piece = std::max<int64_t>(bytes, 1);
  const int64_t stride = (piece + int64_t(kAlign) - 1) / int64_t(kAlign) * int64_t(kAlign);
  auto write = [&](int b, int64_t off, int64_t len) {
    if (me_ != root) return;
    for (int r = 0; r < n_; ++r)
      if (r != me_) std::memcpy(slot(me_, b) + r * stride, static_cast<const uint8_t*>(ins[r]) + off, size_t(len));
  };
  auto read = [&](int b, int64_t off, int64_t len) {
    const uint8_t* from = me_ == root ? static_cast<const uint8_t*>(ins[me_]) + off : slot(root, b) + me_ * stride;
    std::memcpy(dst + off, from, size_t(len));
  };
  if (oneshot) {
    Ctx c = arrive(Op::kScatter, dtype, RedOp::kSum, count, root, deadline_ns, bad, [&](int b) { write(b, 0, bytes); });
    if (bytes) read(int(c.seq & 1), 0, bytes);
    return;
  }
  Ctx c = arrive(Op::kScatter, dtype, RedOp::kSum, count, root, deadline_ns, bad);
  int k = 0;
  for (int64_t off = 0; off < bytes; off += piece, ++k) {
    const int64_t len = std::min(piece, bytes - off);
    write(k & 1, off, len);
    step(c);
    read(k & 1, off, len);
  }
  step(c);
}

void LocalComm::alltoall(const void* const* sends, const int64_t* send_counts, void* const* recvs,
                         const int64_t* recv_counts, DType dtype, int64_t deadline_ns, const Invalid& bad) {
  const int64_t es = int64_t(elementSize(dtype));
  // Zero-copy when the sends are one contiguous buffer (all_to_all_single).
  int64_t total = 0;
  bool contiguous = true;
  for (int j = 0; j < n_; ++j) {
    contiguous = contiguous && sends[j] == static_cast<const uint8_t*>(sends[0]) + total * es;
    total += send_counts[j];
  }
  if (contiguous) zcPublish(sends[0], total * es, sends[0], total * es);
  Ctx c = arrive(Op::kAlltoall, dtype, RedOp::kSum, 0, 0, deadline_ns, bad, {}, send_counts, recv_counts);
  if (contiguous && zcAgree(c)) {
    const int zpar = int(c.seq & 1);
    for (int i = 0; i < n_; ++i) {
      if (recv_counts[i] <= 0) continue;
      const uint8_t* from = static_cast<const uint8_t*>(sends[me_]);
      if (i != me_) {
        int64_t before = 0;  // elements rank i sends to ranks below me
        for (int j = 0; j < me_; ++j) before += seg_.ctrl(i).send_counts[zpar][j];
        from = zcPeer(c, i, false) + before * es;
      }
      std::memcpy(recvs[i], from, size_t(recv_counts[i] * es));
    }
    return zcDone(c);
  }
  // Every rank knows the whole matrix now, so all plan the same rounds.
  int64_t largest = 0;
  const int par = int(c.seq & 1);
  for (int i = 0; i < n_; ++i)
    for (int j = 0; j < n_; ++j) largest = std::max(largest, seg_.ctrl(i).send_counts[par][j] * es);
  if (largest == 0) return;
  const int64_t piece = alignDown(int64_t(seg_.slotBytes()) / n_, int64_t(kAlign));
  int k = 0;
  for (int64_t off = 0; off < largest; off += piece, ++k) {
    const int b = k & 1;
    for (int j = 0; j < n_; ++j) {
      const int64_t len = std::min(piece, send_counts[j] * es - off);
      if (j != me_ && len > 0)
        std::memcpy(slot(me_, b) + j * piece, static_cast<const uint8_t*>(sends[j]) + off, size_t(len));
    }
    step(c);
    for (int i = 0; i < n_; ++i) {
      const int64_t len = std::min(piece, recv_counts[i] * es - off);
      if (len <= 0) continue;
      const uint8_t* from = i == me_ ? static_cast<const uint8_t*>(sends[me_]) + off : slot(i, b) + me_ * piece;
      std::memcpy(static_cast<uint8_t*>(recvs[i]) + off, from, size_t(len));
    }
  }
  step(c);
}

}  // namespace npudist::hccl
