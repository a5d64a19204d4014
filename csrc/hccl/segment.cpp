#include "hccl/segment.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <c10/util/Exception.h>

#include <cerrno>
#include <cstring>
#include <new>

namespace npudist::hccl {
namespace {

constexpr size_t kPage = 4096;
size_t roundUp(size_t v, size_t a) { return (v + a - 1) / a * a; }

}  // namespace

void Segment::layout() {
  ctrl_off_ = roundUp(sizeof(SegmentHeader), kPage);
  slots_off_ = roundUp(ctrl_off_ + size_t(nranks_) * roundUp(sizeof(RankCtrl), 64), kPage);
  chan_off_ = slots_off_ + size_t(nranks_) * 2 * slot_bytes_;
  size_t pairs = size_t(nranks_) * size_t(nranks_);
  chan_data_off_ = roundUp(chan_off_ + pairs * roundUp(sizeof(P2PChannel), 64), kPage);
  chan_stride_ = 2 * p2p_bytes_;
  size_ = chan_data_off_ + pairs * chan_stride_;
}

Segment Segment::create(const std::string& name, int nranks, size_t slot_bytes, size_t p2p_chunk_bytes) {
  TORCH_CHECK(nranks >= 1 && nranks <= kMaxLocalRanks, "hccl: ", nranks, " ranks on one host; at most ", kMaxLocalRanks,
              " are supported");
  Segment s;
  s.nranks_ = nranks;
  s.slot_bytes_ = roundUp(slot_bytes, kPage);
  s.p2p_bytes_ = roundUp(p2p_chunk_bytes, kPage);
  s.layout();
  int fd = shm_open(name.c_str(), O_RDWR | O_CREAT | O_EXCL, 0600);
  TORCH_CHECK(fd >= 0, "hccl: cannot create shared memory segment /dev/shm", name, ": ", std::strerror(errno),
              " (is /dev/shm mounted and writable?)");
  // Sparse: pages are committed only when a collective touches them.
  if (ftruncate(fd, off_t(s.size_)) != 0) {
    int e = errno;
    close(fd);
    shm_unlink(name.c_str());
    TORCH_CHECK(false, "hccl: cannot size shared memory segment to ", s.size_, " bytes: ", std::strerror(e));
  }
  void* p = mmap(nullptr, s.size_, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  int e = errno;
  close(fd);
  if (p == MAP_FAILED) {
    shm_unlink(name.c_str());
    TORCH_CHECK(false, "hccl: cannot map shared memory segment: ", std::strerror(e));
  }
  s.base_ = static_cast<uint8_t*>(p);
  auto* h = new (s.base_) SegmentHeader();
  h->nranks = uint32_t(nranks);
  h->slot_bytes = s.slot_bytes_;
  h->p2p_chunk_bytes = s.p2p_bytes_;
  for (int r = 0; r < nranks; ++r) new (&s.ctrl(r)) RankCtrl();
  for (int a = 0; a < nranks; ++a)
    for (int b = 0; b < nranks; ++b) new (&s.channel(a, b)) P2PChannel();
  std::atomic_thread_fence(std::memory_order_seq_cst);
  reinterpret_cast<std::atomic<uint64_t>*>(&h->magic)->store(kSegmentMagic, std::memory_order_release);
  return s;
}

Segment Segment::open(const std::string& name, int nranks) {
  int fd = shm_open(name.c_str(), O_RDWR, 0600);
  TORCH_CHECK(fd >= 0, "hccl: cannot open shared memory segment /dev/shm", name, ": ", std::strerror(errno));
  struct stat st;
  fstat(fd, &st);
  void* p = mmap(nullptr, size_t(st.st_size), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  int e = errno;
  close(fd);
  TORCH_CHECK(p != MAP_FAILED, "hccl: cannot map shared memory segment: ", std::strerror(e));
  Segment s;
  s.base_ = static_cast<uint8_t*>(p);
  s.size_ = size_t(st.st_size);
  SegmentHeader& h = s.header();
  TORCH_CHECK(reinterpret_cast<std::atomic<uint64_t>*>(&h.magic)->load(std::memory_order_acquire) == kSegmentMagic &&
                  int(h.nranks) == nranks,
              "hccl: shared memory segment ", name, " does not belong to this group (", h.nranks, " ranks, expected ",
              nranks, ")");
  s.nranks_ = nranks;
  s.slot_bytes_ = h.slot_bytes;
  s.p2p_bytes_ = h.p2p_chunk_bytes;
  size_t mapped = s.size_;
  s.layout();
  TORCH_CHECK(s.size_ == mapped, "hccl: shared memory segment ", name, " has an unexpected size");
  return s;
}

void Segment::unlinkName(const std::string& name) { shm_unlink(name.c_str()); }

Segment::Segment(Segment&& o) noexcept { *this = std::move(o); }

Segment& Segment::operator=(Segment&& o) noexcept {
  if (this != &o) {
    if (base_) munmap(base_, size_);
    base_ = o.base_;
    size_ = o.size_;
    nranks_ = o.nranks_;
    slot_bytes_ = o.slot_bytes_;
    p2p_bytes_ = o.p2p_bytes_;
    ctrl_off_ = o.ctrl_off_;
    slots_off_ = o.slots_off_;
    chan_off_ = o.chan_off_;
    chan_data_off_ = o.chan_data_off_;
    chan_stride_ = o.chan_stride_;
    o.base_ = nullptr;
  }
  return *this;
}

Segment::~Segment() {
  if (base_) munmap(base_, size_);
}

RankCtrl& Segment::ctrl(int r) const {
  return *reinterpret_cast<RankCtrl*>(base_ + ctrl_off_ + size_t(r) * roundUp(sizeof(RankCtrl), 64));
}

uint8_t* Segment::slot(int r, int buf) const {
  return base_ + slots_off_ + (size_t(r) * 2 + size_t(buf)) * slot_bytes_;
}

P2PChannel& Segment::channel(int src, int dst) const {
  size_t i = size_t(src) * size_t(nranks_) + size_t(dst);
  return *reinterpret_cast<P2PChannel*>(base_ + chan_off_ + i * roundUp(sizeof(P2PChannel), 64));
}

uint8_t* Segment::channelData(int src, int dst, int buf) const {
  size_t i = size_t(src) * size_t(nranks_) + size_t(dst);
  return base_ + chan_data_off_ + i * chan_stride_ + size_t(buf) * p2p_bytes_;
}

}  // namespace npudist::hccl
