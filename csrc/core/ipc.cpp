#include "core/ipc.h"

#include <c10/core/Allocator.h>
#include <c10/util/Exception.h>
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <iterator>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <unordered_map>

#include "core/device.h"
#include "core/npu_check.h"

namespace npudist::core::ipc {

namespace {

constexpr size_t kSlotsPerFile = 4096;  // 32 KiB of int64 counters
constexpr size_t kCounterBytes = kSlotsPerFile * sizeof(int64_t);

// A memfd of reference counts, mapped shared; lives while mapped.
struct CounterFile {
  int fd = -1;
  uint64_t token = 0;
  std::atomic<int64_t>* counts = nullptr;
  std::vector<bool> used = std::vector<bool>(kSlotsPerFile, false);
  size_t in_use = 0;
};

struct SentEntry {
  c10::Storage keep;  // the exporter's hold: the allocator cannot reuse the block
  size_t file;
  size_t slot;
  uint64_t id;
};

struct Exporter {
  std::mutex mutex;
  std::vector<std::unique_ptr<CounterFile>> files;
  std::unordered_map<c10::StorageImpl*, SentEntry> sent;
  uint64_t next_id = 1;
};

Exporter& exporter() {
  static auto* e = new Exporter();  // never destroyed: consumers' storages may outlive static teardown
  return *e;
}

uint64_t randomToken() {
  std::random_device rd;
  return (uint64_t(rd()) << 32) ^ uint64_t(rd()) ^ uint64_t(getpid());
}

std::atomic<int64_t>* mapCounters(int fd) {
  void* p = mmap(nullptr, kCounterBytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  TORCH_CHECK(p != MAP_FAILED, "npu IPC: cannot map the reference-count file: ", std::strerror(errno));
  return static_cast<std::atomic<int64_t>*>(p);
}

// Finds a free counter slot, making a new counter file when all are full.
std::pair<size_t, size_t> takeSlot(Exporter& ex) {
  for (size_t f = 0; f < ex.files.size(); ++f) {
    CounterFile& cf = *ex.files[f];
    if (cf.in_use == kSlotsPerFile) continue;
    for (size_t s = 0; s < kSlotsPerFile; ++s)
      if (!cf.used[s]) {
        cf.used[s] = true;
        cf.in_use++;
        cf.counts[s].store(0);
        return {f, s};
      }
  }
  auto cf = std::make_unique<CounterFile>();
  cf->fd = memfd_create("npudist-ipc-refcounts", MFD_CLOEXEC);
  TORCH_CHECK(cf->fd >= 0, "npu IPC: memfd_create for reference counts failed: ", std::strerror(errno));
  TORCH_CHECK(ftruncate(cf->fd, off_t(kCounterBytes)) == 0, "npu IPC: ftruncate failed: ", std::strerror(errno));
  cf->counts = mapCounters(cf->fd);
  cf->token = randomToken();
  cf->used[0] = true;
  cf->in_use = 1;
  ex.files.push_back(std::move(cf));
  return {ex.files.size() - 1, 0};
}

size_t collectLocked(Exporter& ex) {
  size_t held = 0;
  for (auto it = ex.sent.begin(); it != ex.sent.end();) {
    CounterFile& cf = *ex.files[it->second.file];
    if (cf.counts[it->second.slot].load(std::memory_order_acquire) > 0) {
      ++held;
      ++it;
      continue;
    }
    cf.used[it->second.slot] = false;
    cf.in_use--;
    it = ex.sent.erase(it);  // drops the hold; the storage frees if nothing else uses it
  }
  return held;
}

// Consumer side: one mapping per counter file, shared by the storages using it.
struct CounterMapping {
  std::atomic<int64_t>* counts = nullptr;
  ~CounterMapping() {
    if (counts) munmap(counts, kCounterBytes);
  }
};

std::mutex g_import_mutex;
std::map<uint64_t, std::weak_ptr<CounterMapping>> g_counter_maps;

std::shared_ptr<CounterMapping> counterMapping(int fd, uint64_t token) {
  std::lock_guard<std::mutex> g(g_import_mutex);
  auto it = g_counter_maps.find(token);
  if (it != g_counter_maps.end())
    if (auto m = it->second.lock()) return m;
  auto m = std::make_shared<CounterMapping>();
  m->counts = mapCounters(fd);
  if (g_counter_maps.size() >= 64)  // forget files no storage of ours maps any more
    for (auto e = g_counter_maps.begin(); e != g_counter_maps.end();)
      e = e->second.expired() ? g_counter_maps.erase(e) : std::next(e);
  g_counter_maps[token] = m;
  return m;
}

struct ImportContext {
  void* base;
  std::shared_ptr<CounterMapping> counters;
  int64_t slot;
};

void releaseImport(void* raw) {
  auto* ctx = static_cast<ImportContext*>(raw);
  driver::getDriver().closeImportedMem(ctx->base);  // nothing useful to do on failure in a deleter
  ctx->counters->counts[ctx->slot].fetch_sub(1, std::memory_order_acq_rel);
  delete ctx;
}

}  // namespace

ExportedStorage exportStorage(const c10::Storage& storage) {
  TORCH_CHECK(storage.device_type() == c10::DeviceType::PrivateUse1,
              "npu IPC: exportStorage needs an npu storage, got ", storage.device());
  TORCH_CHECK(storage.nbytes() > 0 && storage.data(), "npu IPC: an empty storage has no memory to share");
  ExportedStorage out;
  int device = -1, fd = -1;
  std::vector<driver::MemExtent> extents;
  NPU_CHECK(driver::getDriver().exportMem(storage.data(), storage.nbytes(), &device, &fd, &extents, &out.offset));
  out.device = device;
  out.mem_fd = fd;
  out.nbytes = storage.nbytes();
  for (const auto& x : extents) out.extents.emplace_back(x.file_offset, x.size);

  Exporter& ex = exporter();
  std::lock_guard<std::mutex> g(ex.mutex);
  collectLocked(ex);
  auto it = ex.sent.find(storage.unsafeGetStorageImpl());
  if (it == ex.sent.end()) {
    auto [file, slot] = takeSlot(ex);
    it = ex.sent.emplace(storage.unsafeGetStorageImpl(), SentEntry{storage, file, slot, ex.next_id++}).first;
  }
  CounterFile& cf = *ex.files[it->second.file];
  cf.counts[it->second.slot].fetch_add(1, std::memory_order_acq_rel);
  out.counter_fd = cf.fd;
  out.counter_token = cf.token;
  out.slot = int64_t(it->second.slot);
  out.entry_id = it->second.id;
  return out;
}

c10::Storage importStorage(int64_t device, int mem_fd, const std::vector<std::pair<size_t, size_t>>& extents,
                           size_t offset, size_t nbytes, int counter_fd, uint64_t counter_token, int64_t slot) {
  TORCH_CHECK(slot >= 0 && size_t(slot) < kSlotsPerFile, "npu IPC: reference-count slot ", slot, " out of range");
  auto counters = counterMapping(counter_fd, counter_token);
  void* base = nullptr;
  try {
    // Any failure from here on drops this message's reference, so the exporter can release.
    checkDeviceIndex(c10::DeviceIndex(device));
    std::vector<driver::MemExtent> xs;
    size_t total = 0;
    for (const auto& [off, len] : extents) {
      xs.push_back(driver::MemExtent{off, len});
      total += len;
    }
    TORCH_CHECK(offset + nbytes <= total, "npu IPC: storage (offset ", offset, ", ", nbytes,
                " bytes) lies outside the shared range of ", total, " bytes");
    NPU_CHECK(driver::getDriver().importMem(int(device), mem_fd, xs, &base));
  } catch (...) {
    counters->counts[slot].fetch_sub(1, std::memory_order_acq_rel);
    throw;
  }
  auto* ctx = new ImportContext{base, std::move(counters), slot};
  c10::DataPtr ptr(static_cast<char*>(base) + offset, ctx, &releaseImport, npuDevice(c10::DeviceIndex(device)));
  return c10::Storage(c10::Storage::use_byte_size_t(), nbytes, std::move(ptr), /*allocator=*/nullptr,
                      /*resizable=*/false);
}

size_t collect() {
  Exporter& ex = exporter();
  std::lock_guard<std::mutex> g(ex.mutex);
  return collectLocked(ex);
}

void releaseReference(int counter_fd, uint64_t counter_token, int64_t slot) {
  TORCH_CHECK(slot >= 0 && size_t(slot) < kSlotsPerFile, "npu IPC: reference-count slot ", slot, " out of range");
  counterMapping(counter_fd, counter_token)->counts[slot].fetch_sub(1, std::memory_order_acq_rel);
}

bool locate(const void* p, size_t bytes, int* device, int* fd, size_t* file_offset) {
  if (bytes == 0) return false;
  driver::Driver& drv = driver::getDriver();
  if (drv.deviceFromPtr(p) < 0) return false;  // cpu memory: no lock, no error text
  std::vector<driver::MemExtent> extents;
  size_t in_range = 0;
  if (drv.exportMem(p, bytes, device, fd, &extents, &in_range) != driver::Error::kSuccess || extents.size() != 1)
    return false;
  *file_offset = extents[0].file_offset + in_range;
  return true;
}

}  // namespace npudist::core::ipc
