// HostDriver: the Driver on host memory.
//
// Each device owns a window of reserved virtual address space (PROT_NONE,
// MAP_NORESERVE) and a sparse memfd that plays the role of its physical
// memory. A physical chunk is a range of that file; mapping it places file
// pages at an address inside a reservation (MAP_SHARED|MAP_FIXED); freeing it
// punches a hole so the pages go back to the kernel. Capacity is enforced on
// the bytes of physical chunks outstanding per device.
#include "driver/config.h"
#include "driver/driver.h"
#include "driver/range_allocator.h"
#include "driver/stream_queue.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <map>
#include <mutex>
#include <sstream>
#include <thread>
#include <unordered_set>

namespace npudist::driver {

namespace {
thread_local std::string t_last_error;
thread_local int t_current_device = 0;

constexpr size_t kGranularity = size_t(2) << 20;  // 2 MiB, as ACL's huge-page granularity
constexpr int kMaxDevices = 64;

size_t roundUp(size_t n, size_t m) { return (n + m - 1) / m * m; }

Error fail(Error e, const std::string& msg) {
  t_last_error = msg;
  return e;
}
Error failErrno(const std::string& what) { return fail(Error::kSystem, what + ": " + std::strerror(errno)); }
}  // namespace

const char* errorName(Error e) {
  switch (e) {
    case Error::kSuccess:
      return "success";
    case Error::kInvalidValue:
      return "invalid value";
    case Error::kInvalidDevice:
      return "invalid device";
    case Error::kInvalidConfig:
      return "invalid configuration";
    case Error::kOutOfMemory:
      return "out of memory";
    case Error::kOutOfAddressSpace:
      return "out of address space";
    case Error::kInvalidHandle:
      return "invalid handle";
    case Error::kNotReady:
      return "not ready";
    case Error::kEventNotTimed:
      return "event not created with timing";
    case Error::kSystem:
      return "system error";
  }
  return "unknown error";
}

const std::string& lastErrorMessage() { return t_last_error; }

Error Driver::unsupported(const char* call) {
  return fail(Error::kInvalidValue,
              std::string(call) + ": this npu driver cannot share device memory between processes");
}

struct PhysicalChunk {
  int device;
  size_t file_offset;
  size_t size;
  int map_count = 0;
};

namespace {

struct Mapping {
  size_t size;
  PhysicalChunk* chunk;
  size_t chunk_offset;  // where in the chunk the mapping starts
};

struct DeviceMemory {
  std::mutex mutex;
  char* base = nullptr;  // address window
  size_t window = 0;
  int fd = -1;  // physical memory
  size_t capacity = 0;
  size_t used = 0;  // physical bytes handed out
  RangeAllocator addresses;
  RangeAllocator file;
  std::map<char*, size_t> reservations;  // start -> size
  std::map<char*, Mapping> mappings;     // start -> mapping
  std::unordered_set<PhysicalChunk*> chunks;
  std::map<char*, size_t> imports;  // start -> size, ranges mapped from other processes' files
};

class HostDriver final : public Driver {
 public:
  HostDriver() : cfg_(clusterConfig()) {}

  Error checkConfig() {
    if (!cfg_.error.empty()) return fail(Error::kInvalidConfig, cfg_.error);
    return Error::kSuccess;
  }

  Error checkDevice(int device) {
    if (Error e = checkConfig(); e != Error::kSuccess) return e;
    int n = int(cfg_.visible.size());
    if (device < 0 || device >= n) {
      std::ostringstream os;
      os << "npu device index " << device << " is out of range: ";
      if (n == 0)
        os << "no npu is visible (ASCEND_RT_VISIBLE_DEVICES is empty)";
      else
        os << n << " npu device(s) are visible, valid indices are 0.." << n - 1;
      if (n < cfg_.physical_device_count)
        os << " (ASCEND_RT_VISIBLE_DEVICES narrows the " << cfg_.physical_device_count << " devices of this host)";
      return fail(Error::kInvalidDevice, os.str());
    }
    return Error::kSuccess;
  }

  // ---- devices ----
  Error getDeviceCount(int* count) override {
    if (Error e = checkConfig(); e != Error::kSuccess) return e;
    *count = int(cfg_.visible.size());
    return Error::kSuccess;
  }
  Error setDevice(int device) override {
    if (Error e = checkDevice(device); e != Error::kSuccess) return e;
    t_current_device = device;
    return Error::kSuccess;
  }
  Error getDevice(int* device) override {
    *device = t_current_device;
    return Error::kSuccess;
  }
  Error getDeviceProperties(int device, DeviceProperties* props) override {
    if (Error e = checkDevice(device); e != Error::kSuccess) return e;
    props->name = "npudist simulated NPU (host memory)";
    props->total_memory = cfg_.device_memory;
    props->multi_processor_count = int(std::max(1u, std::thread::hardware_concurrency()));
    props->major = 1;
    props->minor = 0;
    props->physical_id = cfg_.visible[size_t(device)];
    return Error::kSuccess;
  }
  Error getMemInfo(int device, size_t* free_bytes, size_t* total_bytes) override {
    if (Error e = checkDevice(device); e != Error::kSuccess) return e;
    DeviceMemory& m = mem_[size_t(device)];
    std::lock_guard<std::mutex> g(m.mutex);
    *total_bytes = cfg_.device_memory;
    *free_bytes = cfg_.device_memory - m.used;
    return Error::kSuccess;
  }
  int deviceFromPtr(const void* ptr) override {
    auto p = static_cast<const char*>(ptr);
    for (int d = 0; d < kMaxDevices; ++d) {
      const char* base = bases_[size_t(d)].load(std::memory_order_acquire);
      if (base && p >= base && p < base + windows_[size_t(d)]) return d;
    }
    return -1;
  }
  Error synchronizeDevice(int device) override {
    if (Error e = checkDevice(device); e != Error::kSuccess) return e;
    std::vector<StreamObject*> streams;
    {
      std::lock_guard<std::mutex> g(streams_mutex_);
      for (StreamObject* s : streams_)
        if (s->device == device) streams.push_back(s);
    }
    std::string err;
    for (StreamObject* s : streams)
      if (!s->synchronize(&err)) return fail(Error::kSystem, err);
    return Error::kSuccess;
  }
  bool devicePending(int device) override {
    // (StreamObject::synchronize returns at once, reporting nothing, when has_pending is false)
    std::lock_guard<std::mutex> g(streams_mutex_);
    for (StreamObject* s : streams_)
      if (s->device == device && s->has_pending.load(std::memory_order_acquire)) return true;
    return false;
  }

  // ---- virtual memory ----
  size_t allocationGranularity() override { return kGranularity; }

  Error reserveMemAddress(int device, size_t size, void** ptr) override {
    if (Error e = deviceMemory(device); e != Error::kSuccess) return e;
    if (size == 0 || size % kGranularity)
      return fail(Error::kInvalidValue, "reserveMemAddress: size must be a non-zero multiple of the 2 MiB granularity");
    DeviceMemory& m = mem_[size_t(device)];
    std::lock_guard<std::mutex> g(m.mutex);
    size_t off;
    if (!m.addresses.allocate(size, &off)) {
      std::ostringstream os;
      os << "npu " << device << ": no free address range of " << size << " bytes in the device's " << m.window
         << "-byte window";
      return fail(Error::kOutOfAddressSpace, os.str());
    }
    m.reservations[m.base + off] = size;
    *ptr = m.base + off;
    return Error::kSuccess;
  }

  Error releaseMemAddress(void* ptr) override {
    int device = deviceFromPtr(ptr);
    if (device < 0) return fail(Error::kInvalidHandle, "releaseMemAddress: pointer is not a reservation");
    DeviceMemory& m = mem_[size_t(device)];
    std::lock_guard<std::mutex> g(m.mutex);
    auto it = m.reservations.find(static_cast<char*>(ptr));
    if (it == m.reservations.end())
      return fail(Error::kInvalidHandle, "releaseMemAddress: pointer is not the start of a reservation");
    auto mapped = m.mappings.lower_bound(it->first);
    if (mapped != m.mappings.end() && mapped->first < it->first + it->second)
      return fail(Error::kInvalidValue, "releaseMemAddress: the range still has mappings; unmap them first");
    m.addresses.release(size_t(it->first - m.base), it->second);
    m.reservations.erase(it);
    return Error::kSuccess;
  }

  Error mallocPhysical(int device, size_t size, PhysicalHandle* handle) override {
    if (Error e = deviceMemory(device); e != Error::kSuccess) return e;
    if (size == 0 || size % kGranularity)
      return fail(Error::kInvalidValue, "mallocPhysical: size must be a non-zero multiple of the 2 MiB granularity");
    DeviceMemory& m = mem_[size_t(device)];
    std::lock_guard<std::mutex> g(m.mutex);
    size_t off;
    if (m.used + size > m.capacity || !m.file.allocate(size, &off)) {
      std::ostringstream os;
      os << "npu " << device << ": cannot allocate " << size << " bytes of physical memory; " << m.used << " of "
         << m.capacity << " bytes are in use (NPUDIST_DEVICE_MEMORY sets the capacity)";
      return fail(Error::kOutOfMemory, os.str());
    }
    m.used += size;
    auto* chunk = new PhysicalChunk{device, off, size};
    m.chunks.insert(chunk);
    *handle = chunk;
    return Error::kSuccess;
  }

  Error freePhysical(PhysicalHandle chunk) override {
    DeviceMemory* m = memoryOf(chunk);
    if (!m) return fail(Error::kInvalidHandle, "freePhysical: unknown physical handle");
    std::lock_guard<std::mutex> g(m->mutex);
    if (!m->chunks.count(chunk)) return fail(Error::kInvalidHandle, "freePhysical: unknown physical handle");
    if (chunk->map_count) return fail(Error::kInvalidValue, "freePhysical: chunk is still mapped; unmap it first");
    // Give the pages back to the kernel now, not when the file closes.
    if (fallocate(m->fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, off_t(chunk->file_offset), off_t(chunk->size)))
      return failErrno("freePhysical: fallocate(PUNCH_HOLE)");
    m->file.release(chunk->file_offset, chunk->size);
    m->used -= chunk->size;
    m->chunks.erase(chunk);
    delete chunk;
    return Error::kSuccess;
  }

  Error mapMem(void* ptr, size_t size, size_t offset, PhysicalHandle chunk) override {
    DeviceMemory* m = memoryOf(chunk);
    if (!m) return fail(Error::kInvalidHandle, "mapMem: unknown physical handle");
    auto p = static_cast<char*>(ptr);
    {
      std::lock_guard<std::mutex> g(m->mutex);
      if (!m->chunks.count(chunk)) return fail(Error::kInvalidHandle, "mapMem: unknown physical handle");
      if (size == 0 || size % kGranularity || offset % kGranularity || offset + size > chunk->size)
        return fail(Error::kInvalidValue, "mapMem: size/offset must be granularity multiples inside the chunk");
      auto res = m->reservations.upper_bound(p);
      if (res == m->reservations.begin() || (--res, p + size > res->first + res->second))
        return fail(Error::kInvalidValue, "mapMem: range is not inside a reservation of the chunk's device");
      auto next = m->mappings.lower_bound(p);
      bool overlaps = (next != m->mappings.end() && next->first < p + size);
      if (next != m->mappings.begin()) {
        auto prev = std::prev(next);
        overlaps = overlaps || prev->first + prev->second.size > p;
      }
      if (overlaps) return fail(Error::kInvalidValue, "mapMem: range overlaps an existing mapping");
      void* got =
          mmap(p, size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, m->fd, off_t(chunk->file_offset + offset));
      if (got == MAP_FAILED) return failErrno("mapMem: mmap");
      m->mappings[p] = Mapping{size, chunk, offset};
      chunk->map_count++;
    }
    if (size <= cfg_.huge_page_max) useHugePages(p, size);
    return Error::kSuccess;
  }

  Error unmapMem(void* ptr) override {
    int device = deviceFromPtr(ptr);
    if (device < 0) return fail(Error::kInvalidHandle, "unmapMem: pointer is not device memory");
    DeviceMemory& m = mem_[size_t(device)];
    std::lock_guard<std::mutex> g(m.mutex);
    auto it = m.mappings.find(static_cast<char*>(ptr));
    if (it == m.mappings.end()) return fail(Error::kInvalidHandle, "unmapMem: pointer is not the start of a mapping");
    // Re-reserve the range in place: the address stays ours, the pages go.
    void* got = mmap(ptr, it->second.size, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED | MAP_NORESERVE, -1, 0);
    if (got == MAP_FAILED) return failErrno("unmapMem: mmap");
    it->second.chunk->map_count--;
    m.mappings.erase(it);
    return Error::kSuccess;
  }

  Error memcpy(void* dst, const void* src, size_t count, MemcpyKind) override {
    if (count == 0) return Error::kSuccess;
    if (!dst || !src) return fail(Error::kInvalidValue, "memcpy: null pointer");
    std::memcpy(dst, src, count);
    return Error::kSuccess;
  }

  // ---- sharing device memory between processes ----
  Error exportMem(const void* ptr, size_t size, int* device_out, int* fd, std::vector<MemExtent>* extents,
                  size_t* offset_in_range) override {
    int device = deviceFromPtr(ptr);
    if (device < 0 || size == 0) return fail(Error::kInvalidValue, "exportMem: pointer is not npu device memory");
    DeviceMemory& m = mem_[size_t(device)];
    auto p = static_cast<char*>(const_cast<void*>(ptr));
    char* start = m.base + (size_t(p - m.base) / kGranularity) * kGranularity;
    char* end = m.base + roundUp(size_t(p + size - m.base), kGranularity);
    std::lock_guard<std::mutex> g(m.mutex);
    extents->clear();
    char* at = start;
    auto it = m.mappings.upper_bound(at);
    if (it != m.mappings.begin()) --it;
    for (; at < end; ++it) {
      // Every granule of the range must be mapped from this device's file.
      if (it == m.mappings.end() || it->first > at || it->first + it->second.size <= at)
        return fail(Error::kInvalidValue,
                    "exportMem: the range is not entirely mapped device memory (imported "
                    "memory cannot be exported again; send the original tensor)");
      size_t in_mapping = size_t(at - it->first);
      size_t len = std::min(size_t(end - at), it->second.size - in_mapping);
      size_t file_off = it->second.chunk->file_offset + it->second.chunk_offset + in_mapping;
      if (!extents->empty() && extents->back().file_offset + extents->back().size == file_off)
        extents->back().size += len;  // physically contiguous: one extent
      else
        extents->push_back(MemExtent{file_off, len});
      at += len;
    }
    *device_out = device;
    *fd = m.fd;
    *offset_in_range = size_t(p - start);
    return Error::kSuccess;
  }

  Error importMem(int device, int fd, const std::vector<MemExtent>& extents, void** ptr) override {
    if (Error e = deviceMemory(device); e != Error::kSuccess) return e;
    size_t total = 0;
    for (const MemExtent& x : extents) {
      if (x.size == 0 || x.size % kGranularity || x.file_offset % kGranularity)
        return fail(Error::kInvalidValue, "importMem: extents must be non-empty granularity multiples");
      total += x.size;
    }
    if (total == 0) return fail(Error::kInvalidValue, "importMem: no extents");
    DeviceMemory& m = mem_[size_t(device)];
    std::lock_guard<std::mutex> g(m.mutex);
    size_t off;
    if (!m.addresses.allocate(total, &off))
      return fail(Error::kOutOfAddressSpace, "importMem: npu " + std::to_string(device) +
                                                 " has no free address range of " + std::to_string(total) +
                                                 " bytes for imported memory");
    char* base = m.base + off;
    char* at = base;
    for (const MemExtent& x : extents) {
      if (mmap(at, x.size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, fd, off_t(x.file_offset)) == MAP_FAILED) {
        Error e = failErrno("importMem: mmap of the exporter's npu memory file");
        mmap(base, total, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED | MAP_NORESERVE, -1, 0);
        m.addresses.release(off, total);
        return e;
      }
      at += x.size;
    }
    m.imports[base] = total;
    *ptr = base;
    return Error::kSuccess;
  }

  Error closeImportedMem(void* ptr) override {
    int device = deviceFromPtr(ptr);
    if (device < 0) return fail(Error::kInvalidHandle, "closeImportedMem: pointer is not npu device memory");
    DeviceMemory& m = mem_[size_t(device)];
    std::lock_guard<std::mutex> g(m.mutex);
    auto it = m.imports.find(static_cast<char*>(ptr));
    if (it == m.imports.end()) return fail(Error::kInvalidHandle, "closeImportedMem: pointer is not an imported range");
    if (mmap(ptr, it->second, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED | MAP_NORESERVE, -1, 0) == MAP_FAILED)
      return failErrno("closeImportedMem: mmap");
    m.addresses.release(size_t(it->first - m.base), it->second);
    m.imports.erase(it);
    return Error::kSuccess;
  }

  // ---- streams ----
  Error createStream(int device, int priority, Stream* stream) override {
    if (Error e = checkDevice(device); e != Error::kSuccess) return e;
    auto* s = new StreamObject();
    s->device = device;
    s->priority = priority;
    std::lock_guard<std::mutex> g(streams_mutex_);
    streams_.push_back(s);
    *stream = s;
    return Error::kSuccess;
  }
  Error destroyStream(Stream stream) override {
    {
      std::lock_guard<std::mutex> g(streams_mutex_);
      auto it = std::find(streams_.begin(), streams_.end(), stream);
      if (it == streams_.end()) return fail(Error::kInvalidHandle, "destroyStream: unknown stream");
      streams_.erase(it);
    }
    std::string err;
    stream->synchronize(&err);
    stream->stop();
    delete stream;
    return Error::kSuccess;
  }
  Error launchHostFunc(Stream stream, std::function<void()> fn) override {
    if (!stream) return fail(Error::kInvalidHandle, "launchHostFunc: null stream");
    stream->enqueue(std::move(fn));
    return Error::kSuccess;
  }
  Error synchronizeStream(Stream stream) override {
    std::string err;
    if (!stream->synchronize(&err)) return fail(Error::kSystem, err);
    return Error::kSuccess;
  }
  Error queryStream(Stream stream) override { return stream->idle() ? Error::kSuccess : Error::kNotReady; }
  Error streamWaitEvent(Stream stream, Event event) override {
    stream->addDependencies(event->snapshot());
    return Error::kSuccess;
  }

  // ---- events ----
  Error createEvent(unsigned flags, Event* event) override {
    auto* e = new EventObject();
    e->flags = flags;
    *event = e;
    return Error::kSuccess;
  }
  Error destroyEvent(Event event) override {
    delete event;
    return Error::kSuccess;
  }
  Error recordEvent(Event event, Stream stream) override {
    event->record(stream);
    return Error::kSuccess;
  }
  Error queryEvent(Event event) override { return event->complete() ? Error::kSuccess : Error::kNotReady; }
  Error synchronizeEvent(Event event) override {
    std::string err;
    if (!event->synchronize(&err)) return fail(Error::kSystem, err);
    return Error::kSuccess;
  }
  Error eventElapsedTime(float* ms, Event start, Event end) override {
    if (!(start->flags & kEventTiming) || !(end->flags & kEventTiming))
      return fail(Error::kEventNotTimed, "elapsed_time needs both events created with enable_timing=True");
    {
      std::lock_guard<std::mutex> g1(start->mutex);
      if (!start->recorded) return fail(Error::kInvalidValue, "elapsed_time: the start event was never recorded");
    }
    {
      std::lock_guard<std::mutex> g2(end->mutex);
      if (!end->recorded) return fail(Error::kInvalidValue, "elapsed_time: the end event was never recorded");
    }
    if (start->device != end->device)
      return fail(Error::kInvalidValue, "elapsed_time: the events were recorded on different npus (" +
                                            std::to_string(start->device) + " and " + std::to_string(end->device) +
                                            ")");
    if (!start->complete() || !end->complete())
      return fail(Error::kNotReady, "elapsed_time: an event has not completed yet; synchronize it first");
    *ms = float(double(end->completionNs() - start->completionNs()) / 1e6);
    return Error::kSuccess;
  }

 private:
  // Sets up the device's address window and physical file on first use.
  Error deviceMemory(int device) {
    if (Error e = checkDevice(device); e != Error::kSuccess) return e;
    DeviceMemory& m = mem_[size_t(device)];
    std::lock_guard<std::mutex> g(m.mutex);
    if (m.base) return Error::kSuccess;
    size_t capacity = roundUp(cfg_.device_memory, kGranularity);
    // Address space and file offsets are sparse and cheap: 8x capacity (at
    // least capacity + 512 GiB for small devices) leaves room for several
    // device-sized expandable ranges (one per stream) beside ordinary
    // segments, while 8 devices of the largest capacity (4 TiB) still fit in
    // the 128 TiB user address space.
    size_t window = roundUp(std::min(capacity * 8, capacity + (size_t(512) << 30)), kGranularity);
    window = std::max(window, roundUp(capacity + (size_t(1) << 30), kGranularity));
    std::string name = "npudist-npu" + std::to_string(cfg_.visible[size_t(device)]);
    int fd = memfd_create(name.c_str(), MFD_CLOEXEC);
    if (fd < 0) return failErrno("memfd_create for npu " + std::to_string(device));
    if (ftruncate(fd, off_t(window))) {
      close(fd);
      return failErrno("ftruncate of npu memory file");
    }
    // Over-reserve by one granule so the window can start granularity-aligned.
    void* raw = mmap(nullptr, window + kGranularity, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (raw == MAP_FAILED) {
      close(fd);
      return failErrno("reserving the " + std::to_string(window >> 20) + " MiB address window of npu " +
                       std::to_string(device) +
                       " (NPUDIST_DEVICE_MEMORY x devices in use exceeds this process's "
                       "address space; lower NPUDIST_DEVICE_MEMORY)");
    }
    char* base = reinterpret_cast<char*>(roundUp(reinterpret_cast<uintptr_t>(raw), kGranularity));
    m.fd = fd;
    m.capacity = cfg_.device_memory;
    m.window = window;
    m.addresses.reset(window);
    m.file.reset(window);
    windows_[size_t(device)] = window;
    bases_[size_t(device)].store(base, std::memory_order_release);
    m.base = base;
    return Error::kSuccess;
  }

  // Backs a new mapping [p, p+size) (2 MiB aligned) with 2 MiB pages, as device memory is on
  // hardware and as NumPy's large arrays are (it asks for transparent huge pages): with 4 KiB
  // pages a loop streaming over a few MiB of npu memory spends 20-25 % more time than over
  // NumPy's own memory (TLB misses; measured by benchmarks/xp_npu_pages.py). memfd pages are shmem,
  // which the system's shmem_enabled=never setting keeps at 4 KiB on fault; MADV_COLLAPSE builds
  // 2 MiB pages for the file regardless of that setting, but only where a page is present, so
  // one page per granule is populated first (MADV_POPULATE_WRITE: no data changes). This
  // commits the whole mapping now instead of page by page on first touch, and the caching
  // allocator keeps the segment, so it is paid once. Best effort: kernels before 6.1
  // (no MADV_COLLAPSE) or no free 2 MiB page keep 4 KiB pages; the memory file's layout, and so
  // export/import between processes, is the same either way. Runs outside the device lock.
  static void useHugePages(char* p, size_t size) {
#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif
#ifndef MADV_COLLAPSE
#define MADV_COLLAPSE 25
#endif
    static std::atomic<bool> unsupported{false};
    if (unsupported.load(std::memory_order_relaxed)) return;
    for (size_t g = 0; g < size; g += kGranularity) {
      if (madvise(p + g, 4096, MADV_POPULATE_WRITE) != 0) {
        if (errno == EINVAL) unsupported.store(true, std::memory_order_relaxed);  // kernel < 5.14
        return;
      }
    }
    (void)madvise(p, size, MADV_COLLAPSE);  // (EAGAIN/ENOMEM: no 2 MiB page free now; EINVAL: kernel < 6.1)
  }

  DeviceMemory* memoryOf(PhysicalHandle chunk) {
    if (!chunk || chunk->device < 0 || chunk->device >= kMaxDevices) return nullptr;
    return &mem_[size_t(chunk->device)];
  }

  const ClusterConfig& cfg_;
  std::array<DeviceMemory, kMaxDevices> mem_;
  std::array<std::atomic<char*>, kMaxDevices> bases_{};
  std::array<size_t, kMaxDevices> windows_{};
  std::mutex streams_mutex_;
  std::vector<StreamObject*> streams_;
};

}  // namespace

Driver& getDriver() {
  // Never destroyed: worker threads and deleters may run during exit.
  static Driver* driver = new HostDriver();
  return *driver;
}

}  // namespace npudist::driver
