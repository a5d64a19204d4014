// DeviceCache: one npu device's block cache behind NpuCachingAllocator (pools of
// segments split into blocks, best-fit with coalescing, stream-deferred frees,
// graph-pool routing, stats, history and snapshots). Internal to the allocator:
// only caching_allocator.cpp includes it; the c10 allocator interface stays there.
#pragma once

#include "core/allocator/caching_allocator.h"

#include <torch/csrc/profiler/combined_traceback.h>
#include <algorithm>
#include <array>
#include <chrono>
#include <cstring>
#include <deque>
#include <memory>
#include <mutex>
#include <map>
#include <optional>
#include <set>
#include <unordered_map>
#include <vector>
#include "core/allocator/alloc_config.h"
#include "core/device.h"
#include "core/fault_inject.h"
#include "core/graph/capture_state.h"
#include "core/npu_check.h"
#include "core/stream.h"
#include "profiler/memory_events.h"

namespace npudist::core::allocator_detail {

using c10::CachingAllocator::Stat;
using c10::CachingAllocator::StatArray;
using c10::CachingDeviceAllocator::DeviceStats;
using c10::CachingDeviceAllocator::StatType;

constexpr size_t kMinBlock = 512;                  // every request rounds up to this
constexpr size_t kSmallSize = size_t(1) << 20;     // <= 1 MiB: small pool
constexpr size_t kSmallBuffer = size_t(2) << 20;   // small-pool segments
constexpr size_t kLargeBuffer = size_t(20) << 20;  // segments for 1-10 MiB requests
constexpr size_t kMinLargeAlloc = size_t(10) << 20;
constexpr size_t kGranule = size_t(2) << 20;  // driver granularity

inline size_t roundUp(size_t n, size_t m) { return (n + m - 1) / m * m; }

inline int64_t nowUs() {
  return std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

inline std::string formatBytes(size_t n) {
  char buf[64];
  if (n >= (size_t(1) << 30))
    snprintf(buf, sizeof buf, "%.2f GiB", double(n) / double(size_t(1) << 30));
  else if (n >= (size_t(1) << 20))
    snprintf(buf, sizeof buf, "%.2f MiB", double(n) / double(size_t(1) << 20));
  else
    snprintf(buf, sizeof buf, "%zu bytes", n);
  return buf;
}

struct Segment;

struct Block {
  char* ptr;
  size_t size;
  c10::StreamId stream;
  bool small;
  Segment* segment;
  size_t requested = 0;
  bool allocated = false;
  bool cached = false;     // in its pool's free set
  int pending_events = 0;  // record_stream events still outstanding
  Block* prev = nullptr;   // neighbours inside the segment
  Block* next = nullptr;
  std::vector<c10::Stream> uses;  // streams recorded with record_stream
  std::shared_ptr<c10::GatheredContext> context;
};

struct Segment {
  char* base;
  size_t size;      // bytes covered by blocks (expandable: the used prefix of the range)
  size_t reserved;  // address-space bytes
  c10::StreamId stream;
  bool small;
  bool expandable;
  // fixed: the one physical chunk; expandable: one entry per granule of the
  // range, nullptr where unmapped.
  std::vector<driver::PhysicalHandle> chunks;
  Block* first = nullptr;  // the block at `base` (the same object for the segment's life)
  Block* last = nullptr;   // expandable: the block at the end
  size_t mapped = 0;       // expandable: mapped bytes
};

struct BlockOrder {
  bool operator()(const Block* a, const Block* b) const {
    if (a->stream != b->stream) return a->stream < b->stream;
    if (a->size != b->size) return a->size < b->size;
    return a->ptr < b->ptr;
  }
};
using Pool = std::set<Block*, BlockOrder>;

struct PendingFree {
  driver::Event event;
  Block* block;
};

inline std::function<void(int64_t, int64_t)>& oomObserver() {
  static auto* f = new std::function<void(int64_t, int64_t)>();
  return *f;
}

struct HistoryConfig {
  std::atomic<bool> enabled{false};
  bool trace = false;
  size_t max_entries = 0;
  bool python = false;
};
inline HistoryConfig& history() {
  static auto* h = new HistoryConfig();
  return *h;
}

inline std::shared_ptr<c10::GatheredContext> gatherContext() {
  if (!history().enabled.load(std::memory_order_relaxed) || !history().python) return nullptr;
  return torch::CapturedTraceback::gather(/*python=*/true, /*script=*/false, /*cpp=*/false);
}

class DeviceCache {
 public:
  explicit DeviceCache(c10::DeviceIndex device) : device_(device) {}

  std::mutex mutex;

  // ---- graph pools (private pools of captured graphs) ----
  // A pool's blocks carry a negative key in place of a stream id, so they
  // never serve (or take) ordinary allocations; a stream that captures into
  // the pool is routed to that key.
  c10::StreamId routeOf(c10::StreamId stream) const {
    for (const auto& r : routes_)
      if (r.first == stream) return r.second;
    return stream;
  }
  void routeToPool(c10::StreamId stream, c10::MempoolId_t id) {
    PrivatePool& p = pools_[id];
    if (p.key == 0) p.key = next_pool_key_--;
    p.use_count++;
    routes_.emplace_back(stream, p.key);
  }
  void unroute(c10::StreamId stream) {
    for (auto it = routes_.begin(); it != routes_.end(); ++it)
      if (it->first == stream) {
        routes_.erase(it);
        return;
      }
  }
  void retainPool(c10::MempoolId_t id) {
    PrivatePool& p = pools_[id];
    if (p.key == 0) p.key = next_pool_key_--;
    p.use_count++;
  }
  // Drops one user of the pool; with none left, its free memory goes back to
  // the device now and the rest as its tensors die.
  void releasePool(c10::MempoolId_t id) {
    auto it = pools_.find(id);
    if (it == pools_.end() || it->second.use_count == 0) return;
    if (--it->second.use_count == 0) releaseCachedOf(it->second.key);
  }
  c10::MempoolId_t poolIdOf(c10::StreamId key) const {
    for (const auto& kv : pools_)
      if (kv.second.key == key) return kv.first;
    return {0, 0};
  }
  bool inPool(void* ptr, c10::MempoolId_t id) {
    auto it = pools_.find(id);
    Block* b = find(ptr);
    return it != pools_.end() && b && b->stream == it->second.key;
  }
  bool poolInUse(c10::StreamId key) const {
    if (key >= 0) return false;
    for (const auto& kv : pools_)
      if (kv.second.key == key) return kv.second.use_count > 0;
    return false;
  }
  // Bytes reserved by the segments of a pool.
  size_t poolReserved(c10::MempoolId_t id) const {
    auto it = pools_.find(id);
    if (it == pools_.end()) return 0;
    size_t n = 0;
    for (Segment* seg : segments_)
      if (seg->stream == it->second.key) n += seg->expandable ? seg->mapped : seg->size;
    return n;
  }

  Block* malloc(size_t nbytes, c10::StreamId stream, std::shared_ptr<c10::GatheredContext> ctx) {
    const AllocConfig& cfg = allocConfig();
    processPendingFrees();
    if (!routes_.empty()) stream = routeOf(stream);
    size_t size = roundSize(nbytes, cfg);
    bool small = size <= kSmallSize;
    Pool& pool = small ? small_ : large_;
    driver::Error err = driver::Error::kSuccess;
    Block* b = finish(findFree(pool, stream, size, cfg), size, cfg, &err);
    // New device memory outside a graph's pool is an unsafe call while a
    // capture is underway (as cudaMalloc is during CUDA stream capture).
    if (!b && stream >= 0 && graph::anyCapture())
      graph::checkUnsafeCall("an npu allocation that needs new device memory outside the graph's pool");
    if (!b && cfg.garbage_collection_threshold > 0 &&
        double(reserved()) > cfg.garbage_collection_threshold * double(limit()))
      releaseCached();
    if (!b) b = finish(grow(stream, size, small, cfg, &err), size, cfg, &err);
    if (!b && isOom(err)) {
      stats_.num_alloc_retries++;
      releaseCached();
      b = finish(grow(stream, size, small, cfg, &err), size, cfg, &err);
    }
    if (!b) {
      if (!isOom(err)) throwDriverError(err, "allocating npu memory");
      return nullptr;
    }
    b->allocated = true;
    b->requested = nbytes;
    b->context = std::move(ctx);
    remember(b);
    update(&DeviceStats::allocation, b->small, 1, true);
    update(&DeviceStats::active, b->small, 1, true);
    update(&DeviceStats::allocated_bytes, b->small, b->size, true);
    update(&DeviceStats::active_bytes, b->small, b->size, true);
    update(&DeviceStats::requested_bytes, b->small, nbytes, true);
    if (!b->small && b->size >= allocConfig().max_split_size) stats_.oversize_allocations.increase(1);
    trace("alloc", b->ptr, b->size, b->stream, b->context);
    profiler::reportNpuMemory(b->ptr, int64_t(b->size), size_t(stats_.allocated_bytes[0].current), reserved(), device_);
    return b;
  }

  // Message for an OutOfMemoryError; counts the OOM.
  std::string oomMessage(size_t nbytes) {
    stats_.num_ooms++;
    trace("oom", nullptr, nbytes, 0, nullptr);
    size_t free_b = 0, total = 0;
    NPU_CHECK(driver::getDriver().getMemInfo(device_, &free_b, &total));
    size_t allocated = size_t(stats_.allocated_bytes[0].current);
    size_t reserved_b = reserved();
    std::string asked = formatBytes(nbytes);
    if (nbytes >= (size_t(1) << 20) && nbytes % 1024)
      asked += " (" + std::to_string(nbytes) + " bytes)";  // not exact in MiB
    std::string msg = "NPU out of memory. Tried to allocate " + asked + " (npu " + std::to_string(device_) + "; " +
                      formatBytes(total) + " total capacity; " + formatBytes(allocated) + " already allocated; " +
                      formatBytes(free_b) + " free; " + formatBytes(reserved_b) + " reserved in total by PyTorch";
    if (limit() < total)
      msg += "; the process may reserve at most " + formatBytes(limit()) + " (per_process_memory_fraction)";
    msg += "). ";
    if (reserved_b > allocated && reserved_b - allocated > allocated / 2 && reserved_b - allocated > (size_t(20) << 20))
      msg += "Reserved but unallocated memory is large (" + formatBytes(reserved_b - allocated) +
             "): if it is fragmentation, set PYTORCH_NPU_ALLOC_CONF=expandable_segments:True. ";
    msg += "Free tensors, use smaller batches, or raise the simulated capacity with NPUDIST_DEVICE_MEMORY.";
    return msg;
  }

  void free(Block* b) {
    update(&DeviceStats::allocation, b->small, 1, false);
    update(&DeviceStats::allocated_bytes, b->small, b->size, false);
    update(&DeviceStats::requested_bytes, b->small, b->requested, false);
    if (!b->small && b->size >= allocConfig().max_split_size) stats_.oversize_allocations.decrease(1);
    b->allocated = false;
    trace("free_requested", b->ptr, b->size, b->stream, b->context);
    profiler::reportNpuMemory(b->ptr, -int64_t(b->size), size_t(stats_.allocated_bytes[0].current), reserved(),
                              device_);
    if (!b->uses.empty()) {
      // Reuse only after the work the recorded streams were made to wait for
      // so far has completed.
      for (const c10::Stream& s : b->uses) {
        driver::Event e;
        NPU_CHECK(driver::getDriver().createEvent(driver::kEventDefault, &e));
        NPU_CHECK(driver::getDriver().recordEvent(e, driverStream(s)));
        pending_.push_back({e, b});
        b->pending_events++;
      }
      b->uses.clear();
      return;
    }
    c10::StreamId key = b->stream;
    release(b);
    if (key < 0 && !poolInUse(key)) releaseCachedOf(key);
  }

  void recordStream(Block* b, const c10::Stream& s) {
    if (s.id() == b->stream) return;
    for (const c10::Stream& u : b->uses)
      if (u == s) return;
    b->uses.push_back(s);
  }

  Block* find(void* ptr) {
    auto it = live_.find(ptr);
    return it == live_.end() ? nullptr : it->second;
  }
  void forget(void* ptr) {
    auto node = live_.extract(ptr);
    if (node && spare_live_.size() < kSpareNodes) spare_live_.push_back(std::move(node));
  }

  void releaseCached() { releaseCachedOf(std::nullopt); }

  // Releases cached segments: of every stream and unused pool (nullopt), or
  // of one pool key. Pools still used by a graph keep their memory.
  void releaseCachedOf(std::optional<c10::StreamId> only) {
    processPendingFrees();
    auto wanted = [&](c10::StreamId key) { return only ? key == *only : !poolInUse(key); };
    for (Pool* pool : {&small_, &large_}) {
      for (auto it = pool->begin(); it != pool->end();) {
        Block* b = *it;
        Segment* seg = b->segment;
        if (!seg->expandable && !b->prev && !b->next && wanted(b->stream)) {
          it = pool->erase(it);
          unmapSegment(seg);
          delete b;
        } else {
          ++it;
        }
      }
    }
    for (auto& kv : expandable_) {
      Segment* seg = kv.second;
      if (!wanted(kv.first)) continue;
      unmapFreeGranules(seg);
      Block* only = seg->last;
      if (only && only->cached && !only->prev && seg->mapped == 0) {  // nothing left: forget the range's use
        uncache(only);
        delete only;
        seg->first = seg->last = nullptr;
        seg->size = 0;
      }
    }
  }

  DeviceStats stats() {
    DeviceStats s = stats_;
    s.max_split_size = allocConfig().max_split_size == SIZE_MAX ? -1 : int64_t(allocConfig().max_split_size);
    return s;
  }
  void resetPeaks() {
    for (StatArray* a : arrays())
      for (Stat& st : *a) st.reset_peak();
    stats_.oversize_allocations.reset_peak();
    stats_.oversize_segments.reset_peak();
  }
  void resetAccumulated() {
    for (StatArray* a : arrays())
      for (Stat& st : *a) st.reset_accumulated();
    stats_.num_alloc_retries = stats_.num_ooms = stats_.num_device_alloc = stats_.num_device_free = 0;
  }

  void setFraction(double f) { fraction_ = f; }
  size_t currentLimit() { return limit(); }

  void snapshot(Snapshot& out) {
    for (Segment* seg : segments_) {
      if (seg->size == 0) continue;
      SnapshotSegment s{int(device_),
                        reinterpret_cast<uintptr_t>(seg->base),
                        seg->size,
                        0,
                        0,
                        0,
                        seg->stream,
                        seg->small,
                        seg->expandable,
                        {}};
      if (seg->stream < 0) {
        s.pool_id = poolIdOf(seg->stream);
        s.stream = 0;  // pools are not a stream's
      }
      for (Block* b = seg->first; b; b = b->next) {
        std::string state = b->allocated ? "active_allocated" : b->pending_events ? "active_pending_free" : "inactive";
        s.blocks.push_back(
            {reinterpret_cast<uintptr_t>(b->ptr), b->size, b->allocated ? b->requested : 0, state, b->context});
        if (b->allocated) {
          s.allocated_size += b->size;
          s.requested_size += b->requested;
        }
        if (b->allocated || b->pending_events) s.active_size += b->size;
      }
      out.segments.push_back(std::move(s));
    }
    out.device_traces[size_t(device_)].assign(trace_.begin(), trace_.end());
  }

  void clearTrace() { trace_.clear(); }

 private:
  static bool isOom(driver::Error e) {
    return e == driver::Error::kOutOfMemory || e == driver::Error::kOutOfAddressSpace;
  }

  std::vector<StatArray*> arrays() {
    return {&stats_.allocation,      &stats_.segment,        &stats_.active,       &stats_.inactive_split,
            &stats_.allocated_bytes, &stats_.reserved_bytes, &stats_.active_bytes, &stats_.inactive_split_bytes,
            &stats_.requested_bytes};
  }

  C10_ALWAYS_INLINE void update(StatArray DeviceStats::* array, bool small, size_t amount, bool up) {
    size_t k = small ? size_t(StatType::SMALL_POOL) : size_t(StatType::LARGE_POOL);
    for (size_t i : {size_t(StatType::AGGREGATE), k}) {
      if (up)
        (stats_.*array)[i].increase(amount);
      else
        (stats_.*array)[i].decrease(amount);
    }
  }

  size_t reserved() const { return size_t(stats_.reserved_bytes[0].current); }

  size_t limit() {
    size_t free_b = 0, total = 0;
    NPU_CHECK(driver::getDriver().getMemInfo(device_, &free_b, &total));
    double f = fraction_ > 0 ? fraction_ : allocConfig().per_process_memory_fraction;
    return size_t(double(total) * f);
  }

  static size_t roundSize(size_t n, const AllocConfig& cfg) {
    if (n < kMinBlock) return kMinBlock;
    size_t d = cfg.roundup_power2_divisions;
    if (d > 1 && n > kSmallSize) {
      // Round up to the next of d equal steps between powers of two.
      size_t pow2 = size_t(1) << (63 - __builtin_clzll(uint64_t(n)));
      if (pow2 == n) return n;
      size_t step = std::max(pow2 / d, kMinBlock);
      return roundUp(n, step);
    }
    return roundUp(n, kMinBlock);
  }

  Block* findFree(Pool& pool, c10::StreamId stream, size_t size, const AllocConfig& cfg) {
    Block key{nullptr, size, stream, false, nullptr};
    auto it = pool.lower_bound(&key);
    if (it == pool.end() || (*it)->stream != stream) return nullptr;
    Block* b = *it;
    // Oversize blocks (> max_split_size) serve only requests that are nearly as large.
    if (size < cfg.max_split_size && b->size >= cfg.max_split_size) return nullptr;
    if (size >= cfg.max_split_size && b->size >= size + kLargeBuffer) return nullptr;
    uncache(b);
    return b;
  }

  // Splits a found or new block to `size` and maps what it covers (expandable
  // segments); nullptr (with *err set) when that needs memory there is not.
  Block* finish(Block* b, size_t size, const AllocConfig& cfg, driver::Error* err) {
    if (!b) return nullptr;
    b = split(b, size, cfg);
    if (b->segment->expandable && !mapRange(b->segment, b->ptr, b->size, err)) {
      release(b, /*was_active=*/false);
      return nullptr;
    }
    return b;
  }

  Block* split(Block* b, size_t size, const AllocConfig& cfg) {
    size_t rest = b->size - size;
    bool do_split = b->small ? rest >= kMinBlock : (size < cfg.max_split_size && rest > kSmallSize);
    if (b->segment->expandable) do_split = rest >= kMinBlock;
    if (!do_split) return b;
    Block* r = newBlock(b->ptr + size, rest, b->stream, b->small, b->segment);
    r->prev = b;
    r->next = b->next;
    if (b->next) b->next->prev = r;
    b->next = r;
    b->size = size;
    if (b->segment->expandable && b->segment->last == b) b->segment->last = r;
    cache(r);
    return b;
  }

  // Puts a free block in its pool. A cached block that shares its segment
  // with others is an "inactive split" block (memory_stats' inactive_split*).
  void cache(Block* b) {
    b->cached = true;
    Pool& pool = b->small ? small_ : large_;
    if (!spare_pool_.empty()) {  // a node a previous uncache gave back: no allocation
      Pool::node_type node = std::move(spare_pool_.back());
      spare_pool_.pop_back();
      node.value() = b;
      pool.insert(std::move(node));
    } else {
      pool.insert(b);
    }
    if (b->prev || b->next) {
      update(&DeviceStats::inactive_split, b->small, 1, true);
      update(&DeviceStats::inactive_split_bytes, b->small, b->size, true);
    }
  }

  void uncache(Block* b) {
    auto node = (b->small ? small_ : large_).extract(b);
    if (node && spare_pool_.size() < kSpareNodes) spare_pool_.push_back(std::move(node));
    b->cached = false;
    if (b->prev || b->next) {
      update(&DeviceStats::inactive_split, b->small, 1, false);
      update(&DeviceStats::inactive_split_bytes, b->small, b->size, false);
    }
  }

  // Returns a block of at least `size` bytes from new memory, or nullptr.
  Block* grow(c10::StreamId stream, size_t size, bool small, const AllocConfig& cfg, driver::Error* err) {
    if (!small && cfg.expandable_segments) {
      if (Block* b = growExpandable(stream, size, err)) return b;
      if (isOom(*err)) return nullptr;
    }
    size_t seg_size = small ? kSmallBuffer : (size < kMinLargeAlloc ? kLargeBuffer : roundUp(size, kGranule));
    if (reserved() + seg_size > limit()) {
      *err = driver::Error::kOutOfMemory;
      return nullptr;
    }
    driver::Driver& drv = driver::getDriver();
    driver::PhysicalHandle chunk;
    if ((*err = drv.mallocPhysical(device_, seg_size, &chunk)) != driver::Error::kSuccess) return nullptr;
    void* ptr;
    if ((*err = drv.reserveMemAddress(device_, seg_size, &ptr)) != driver::Error::kSuccess) {
      (void)drv.freePhysical(chunk);
      return nullptr;
    }
    if ((*err = drv.mapMem(ptr, seg_size, 0, chunk)) != driver::Error::kSuccess) {
      (void)drv.releaseMemAddress(ptr);
      (void)drv.freePhysical(chunk);
      return nullptr;
    }
    auto* seg = new Segment{static_cast<char*>(ptr), seg_size, seg_size, stream, small, false, {chunk}};
    segments_.insert(seg);
    update(&DeviceStats::segment, small, 1, true);
    update(&DeviceStats::reserved_bytes, small, seg_size, true);
    if (!small && seg_size >= cfg.max_split_size) stats_.oversize_segments.increase(1);
    stats_.num_device_alloc++;
    trace("segment_alloc", seg->base, seg_size, stream, nullptr);
    seg->first = new Block{seg->base, seg_size, stream, small, seg};
    return seg->first;
  }

  Block* growExpandable(c10::StreamId stream, size_t size, driver::Error* err) {
    driver::Driver& drv = driver::getDriver();
    Segment*& seg = expandable_[stream];
    if (!seg) {
      size_t free_b = 0, total = 0;
      NPU_CHECK(drv.getMemInfo(device_, &free_b, &total));
      size_t span = roundUp(total, kGranule);
      void* ptr;
      if (drv.reserveMemAddress(device_, span, &ptr) != driver::Error::kSuccess) {
        expandable_.erase(stream);
        return nullptr;  // no room for another range: use ordinary segments
      }
      seg = new Segment{static_cast<char*>(ptr), 0, span, stream, false, true, {}};
      seg->chunks.assign(span / kGranule, nullptr);
      segments_.insert(seg);
      update(&DeviceStats::segment, false, 1, true);
    }
    Block* tail = seg->last;
    bool extend = tail && tail->cached;
    size_t have = extend ? tail->size : 0;
    size_t need = roundUp(size - have, kMinBlock);
    if (seg->size + need > seg->reserved) return nullptr;
    char* at = seg->base + seg->size;
    seg->size += need;
    if (extend) {
      uncache(tail);
      tail->size += need;
      return tail;  // malloc maps what it keeps
    }
    auto* b = new Block{at, need, stream, false, seg};
    b->prev = tail;
    if (tail)
      tail->next = b;
    else
      seg->first = b;
    seg->last = b;
    return b;
  }

  // Maps every unmapped granule under [ptr, ptr+size). On failure, maps nothing new.
  bool mapRange(Segment* seg, char* ptr, size_t size, driver::Error* err) {
    driver::Driver& drv = driver::getDriver();
    size_t first = size_t(ptr - seg->base) / kGranule;
    size_t last = (size_t(ptr - seg->base) + size + kGranule - 1) / kGranule;
    size_t missing = 0;
    for (size_t g = first; g < last; ++g) missing += seg->chunks[g] ? 0 : 1;
    if (missing == 0) return true;
    // New physical memory is needed: first give back the free granules, so
    // what stays mapped tracks what is allocated (not in a graph pool in use:
    // its graphs address freed blocks too).
    if (!poolInUse(seg->stream)) unmapFreeGranules(seg);
    if (reserved() + missing * kGranule > limit()) {
      *err = driver::Error::kOutOfMemory;
      return false;
    }
    std::vector<size_t> done;
    for (size_t g = first; g < last; ++g) {
      if (seg->chunks[g]) continue;
      driver::PhysicalHandle chunk;
      if ((*err = drv.mallocPhysical(device_, kGranule, &chunk)) == driver::Error::kSuccess &&
          (*err = drv.mapMem(seg->base + g * kGranule, kGranule, 0, chunk)) != driver::Error::kSuccess) {
        (void)drv.freePhysical(chunk);
      }
      if (*err != driver::Error::kSuccess) {
        for (size_t u : done) unmapGranule(seg, u);
        return false;
      }
      seg->chunks[g] = chunk;
      seg->mapped += kGranule;
      update(&DeviceStats::reserved_bytes, false, kGranule, true);
      done.push_back(g);
    }
    stats_.num_device_alloc++;
    trace("segment_map", seg->base + first * kGranule, (last - first) * kGranule, seg->stream, nullptr);
    return true;
  }

  void unmapGranule(Segment* seg, size_t g) {
    driver::Driver& drv = driver::getDriver();
    NPU_CHECK(drv.unmapMem(seg->base + g * kGranule));
    NPU_CHECK(drv.freePhysical(seg->chunks[g]));
    seg->chunks[g] = nullptr;
    seg->mapped -= kGranule;
    update(&DeviceStats::reserved_bytes, false, kGranule, false);
  }

  // Unmaps the granules that lie entirely inside cached (free) blocks.
  void unmapFreeGranules(Segment* seg) {
    size_t unmapped = 0;
    for (Block* b = seg->last; b; b = b->prev) {
      if (!b->cached) continue;
      size_t lo = roundUp(size_t(b->ptr - seg->base), kGranule) / kGranule;
      size_t end = size_t(b->ptr - seg->base) + b->size;
      // Nothing lies beyond the last block: it owns the rest of its granule.
      size_t hi = b == seg->last ? roundUp(end, kGranule) / kGranule : end / kGranule;
      for (size_t g = lo; g < hi; ++g) {
        if (!seg->chunks[g]) continue;
        unmapGranule(seg, g);
        ++unmapped;
      }
    }
    if (unmapped) {
      stats_.num_device_free++;
      trace("segment_unmap", seg->base, unmapped * kGranule, seg->stream, nullptr);
    }
  }

  void unmapSegment(Segment* seg) {
    driver::Driver& drv = driver::getDriver();
    NPU_CHECK(drv.unmapMem(seg->base));
    NPU_CHECK(drv.releaseMemAddress(seg->base));
    NPU_CHECK(drv.freePhysical(seg->chunks[0]));
    update(&DeviceStats::segment, seg->small, 1, false);
    update(&DeviceStats::reserved_bytes, seg->small, seg->size, false);
    if (!seg->small && seg->size >= allocConfig().max_split_size) stats_.oversize_segments.decrease(1);
    stats_.num_device_free++;
    trace("segment_free", seg->base, seg->size, seg->stream, nullptr);
    segments_.erase(seg);
    delete seg;
  }

  // A block no longer in use: coalesce with free neighbours and cache it.
  void release(Block* b, bool was_active = true) {
    if (was_active) {
      update(&DeviceStats::active, b->small, 1, false);
      update(&DeviceStats::active_bytes, b->small, b->size, false);
      trace("free_completed", b->ptr, b->size, b->stream, b->context);
    }
    b->context.reset();
    if (Block* p = b->prev; p && p->cached) {
      uncache(p);
      p->size += b->size;
      p->next = b->next;
      if (b->next) b->next->prev = p;
      if (b->segment->last == b) b->segment->last = p;
      recycle(b);
      b = p;
    }
    if (Block* n = b->next; n && n->cached) {
      uncache(n);
      b->size += n->size;
      b->next = n->next;
      if (n->next) n->next->prev = b;
      if (b->segment->last == n) b->segment->last = b;
      recycle(n);
    }
    cache(b);
  }

  void processPendingFrees() {
    if (pending_.empty()) return;
    driver::Driver& drv = driver::getDriver();
    for (auto it = pending_.begin(); it != pending_.end();) {
      if (drv.queryEvent(it->event) != driver::Error::kSuccess) {
        ++it;
        continue;
      }
      (void)drv.destroyEvent(it->event);
      Block* b = it->block;
      it = pending_.erase(it);
      if (--b->pending_events == 0) release(b);
    }
  }

  void trace(const char* action, char* ptr, size_t size, c10::StreamId stream,
             const std::shared_ptr<c10::GatheredContext>& ctx) {
    HistoryConfig& h = history();
    if (!h.enabled.load(std::memory_order_relaxed) || !h.trace) return;
    if (trace_.size() >= h.max_entries && !trace_.empty()) trace_.pop_front();
    trace_.push_back({action, reinterpret_cast<uintptr_t>(ptr), size, stream, nowUs(), ctx});
  }

  // Small-object reuse on the split/coalesce path every small tensor takes (a 16-element tensor's
  // allocation splits a cached block and its free merges it back): Block objects, pool-set nodes
  // and live-map nodes given back are reused instead of going through operator new/delete
  // (~600 of ~2,400 instructions per allocate + free). Bounded; nothing else changes.
  static constexpr size_t kSpareNodes = 64;
  Block* newBlock(char* ptr, size_t size, c10::StreamId stream, bool small, Segment* seg) {
    if (spare_blocks_.empty()) return new Block{ptr, size, stream, small, seg};
    Block* b = spare_blocks_.back();
    spare_blocks_.pop_back();
    *b = Block{ptr, size, stream, small, seg};
    return b;
  }
  void recycle(Block* b) {
    if (spare_blocks_.size() >= kSpareNodes) {
      delete b;
      return;
    }
    b->context.reset();
    b->uses.clear();
    spare_blocks_.push_back(b);
  }
  void remember(Block* b) {
    if (spare_live_.empty()) {
      live_.emplace(b->ptr, b);
      return;
    }
    auto node = std::move(spare_live_.back());
    spare_live_.pop_back();
    node.key() = b->ptr;
    node.mapped() = b;
    live_.insert(std::move(node));
  }

  c10::DeviceIndex device_;
  double fraction_ = 0;  // 0: from PYTORCH_NPU_ALLOC_CONF
  Pool small_, large_;
  std::unordered_map<void*, Block*> live_;
  std::vector<Block*> spare_blocks_;
  std::vector<Pool::node_type> spare_pool_;
  std::vector<std::unordered_map<void*, Block*>::node_type> spare_live_;
  std::set<Segment*> segments_;
  std::unordered_map<c10::StreamId, Segment*> expandable_;
  struct PrivatePool {
    c10::StreamId key = 0;  // negative once assigned
    int use_count = 0;      // graphs (and captures) using it
  };
  std::map<c10::MempoolId_t, PrivatePool> pools_;
  std::vector<std::pair<c10::StreamId, c10::StreamId>> routes_;  // capturing stream -> pool key
  c10::StreamId next_pool_key_ = -1;
  std::vector<PendingFree> pending_;
  std::deque<SnapshotTrace> trace_;
  DeviceStats stats_;
};

}  // namespace npudist::core::allocator_detail
