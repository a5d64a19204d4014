// The Driver interface: the one place that knows what an npu physically is.
//
// Its calls follow the Ascend runtime (ACL) concepts — device set/get/count,
// reserve an address range, allocate a physical chunk, map/unmap, memcpy kinds,
// streams, events, host callbacks — so a driver over the real runtime can sit
// beside HostDriver without touching anything above. Nothing here includes
// torch headers. Calls return an Error code (like aclError); the detail of the
// most recent failure on the calling thread is in lastErrorMessage()
// (like aclGetRecentErrMsg).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace npudist::driver {

enum class Error : int {
  kSuccess = 0,
  kInvalidValue,       // bad argument (size, pointer, flag)
  kInvalidDevice,      // device index out of range of the visible devices
  kInvalidConfig,      // NPUDIST_* / ASCEND_RT_VISIBLE_DEVICES could not be used
  kOutOfMemory,        // physical capacity of the device exhausted
  kOutOfAddressSpace,  // the device's virtual address window is full
  kInvalidHandle,      // unknown stream / event / physical handle / mapping
  kNotReady,           // query: work still pending
  kEventNotTimed,      // elapsed time asked of an event created without timing
  kSystem,             // an OS call failed (errno in the message)
};

const char* errorName(Error e);
// Detail of the last failing call made by this thread.
const std::string& lastErrorMessage();

enum class MemcpyKind { kHostToHost, kHostToDevice, kDeviceToHost, kDeviceToDevice };

// A range of a device's physical memory file (bytes; granularity multiples).
struct MemExtent {
  size_t file_offset = 0;
  size_t size = 0;
};

struct DeviceProperties {
  std::string name;
  size_t total_memory = 0;        // bytes of physical capacity
  int multi_processor_count = 0;  // compute units (host cores on HostDriver)
  int major = 0, minor = 0;       // capability
  int physical_id = 0;            // index before ASCEND_RT_VISIBLE_DEVICES renumbering
};

// Opaque handles, as aclrtStream / aclrtEvent / aclrtDrvMemHandle.
struct StreamObject;
struct EventObject;
struct PhysicalChunk;
using Stream = StreamObject*;
using Event = EventObject*;
using PhysicalHandle = PhysicalChunk*;

// Event creation flags (as ACL_EVENT_TIME_LINE).
constexpr unsigned kEventDefault = 0;
constexpr unsigned kEventTiming = 1;

class Driver {
 public:
  virtual ~Driver() = default;

  // ---- devices (indices are logical: after ASCEND_RT_VISIBLE_DEVICES) ----
  virtual Error getDeviceCount(int* count) = 0;
  virtual Error setDevice(int device) = 0;  // per calling thread
  virtual Error getDevice(int* device) = 0;
  virtual Error getDeviceProperties(int device, DeviceProperties* props) = 0;
  // Physical bytes free / total on the device (aclrtGetMemInfo).
  virtual Error getMemInfo(int device, size_t* free_bytes, size_t* total_bytes) = 0;
  // Which device owns an address inside a reserved range (-1 if none).
  virtual int deviceFromPtr(const void* ptr) = 0;
  virtual Error synchronizeDevice(int device) = 0;
  // Whether synchronizeDevice(device) could wait for anything: false only when every stream of
  // the (valid) device is idle, so synchronizing has nothing to wait for and no error to report.
  // A driver that cannot tell cheaply says true.
  virtual bool devicePending(int device) { return true; }

  // ---- virtual memory (aclrtReserveMemAddress / MallocPhysical / MapMem) ----
  // Granularity of reservations, physical chunks and mappings, in bytes.
  virtual size_t allocationGranularity() = 0;
  virtual Error reserveMemAddress(int device, size_t size, void** ptr) = 0;
  virtual Error releaseMemAddress(void* ptr) = 0;
  virtual Error mallocPhysical(int device, size_t size, PhysicalHandle* handle) = 0;
  virtual Error freePhysical(PhysicalHandle handle) = 0;
  // Maps [ptr, ptr+size) of a reservation to the chunk starting at `offset`.
  virtual Error mapMem(void* ptr, size_t size, size_t offset, PhysicalHandle handle) = 0;
  virtual Error unmapMem(void* ptr) = 0;
  virtual Error memcpy(void* dst, const void* src, size_t count, MemcpyKind kind) = 0;

  // ---- sharing device memory between processes (the role of ACL's
  // aclrtMemExportToShareableHandle / ImportFromShareableHandle, and of
  // cudaIpcGetMemHandle / cudaIpcOpenMemHandle) ----
  // Describes the physical memory behind [ptr, ptr+size), which must be
  // mapped: the device, the device's memory file `*fd` (owned by the driver;
  // dup it to pass it on, e.g. SCM_RIGHTS over a Unix socket), the file
  // extents backing the granule-aligned range that covers it, in address
  // order, and ptr's offset inside that range. The exporter must keep the
  // memory allocated while importers use it (the device core refcounts).
  virtual Error exportMem(const void* ptr, size_t size, int* device, int* fd, std::vector<MemExtent>* extents,
                          size_t* offset_in_range) {
    (void)ptr, (void)size, (void)device, (void)fd, (void)extents, (void)offset_in_range;
    return unsupported("exportMem");
  }
  // Maps `extents` of another process's device memory file `fd` at a fresh,
  // contiguous range of `device`'s address window (so getDeviceFromPtr finds
  // it). The mapping keeps the file alive: it stays valid if the exporter
  // exits. The caller may close `fd` afterwards. Not counted against the
  // importer's capacity.
  virtual Error importMem(int device, int fd, const std::vector<MemExtent>& extents, void** ptr) {
    (void)device, (void)fd, (void)extents, (void)ptr;
    return unsupported("importMem");
  }
  // Unmaps a range importMem returned and gives its addresses back.
  virtual Error closeImportedMem(void* ptr) {
    (void)ptr;
    return unsupported("closeImportedMem");
  }

  // ---- streams: ordered queues of deferred work ----
  virtual Error createStream(int device, int priority, Stream* stream) = 0;
  virtual Error destroyStream(Stream stream) = 0;
  // Queue `fn` on the stream behind everything the stream has been made to
  // wait for (aclrtLaunchCallback). It runs on the stream's worker thread, or
  // on a thread that needs its result first ("caller helps").
  virtual Error launchHostFunc(Stream stream, std::function<void()> fn) = 0;
  // Blocks until everything the stream has been made to wait for completed;
  // one atomic load when nothing is pending. Helps run work not yet started.
  virtual Error synchronizeStream(Stream stream) = 0;
  virtual Error queryStream(Stream stream) = 0;  // kSuccess or kNotReady
  virtual Error streamWaitEvent(Stream stream, Event event) = 0;

  // ---- events ----
  virtual Error createEvent(unsigned flags, Event* event) = 0;
  virtual Error destroyEvent(Event event) = 0;
  virtual Error recordEvent(Event event, Stream stream) = 0;
  virtual Error queryEvent(Event event) = 0;  // kSuccess or kNotReady
  virtual Error synchronizeEvent(Event event) = 0;
  virtual Error eventElapsedTime(float* ms, Event start, Event end) = 0;

 protected:
  static Error unsupported(const char* call);
};

// The process-wide driver (HostDriver here). Construction only reads the
// environment; it never fails: configuration errors surface as kInvalidConfig
// from the first call that needs the devices.
Driver& getDriver();

}  // namespace npudist::driver
