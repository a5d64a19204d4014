// Sharing npu storages between processes (torch.multiprocessing, DataLoader
// workers), in the manner of PyTorch's CUDA IPC (CudaIPCTypes.h): the
// exporter keeps the storage alive in a "sent" table while a reference count
// in shared memory says consumers still hold it; every consumer storage
// decrements it when freed; collect() drops the entries that reached zero.
//
// Transport of the two file descriptors (the device's memory file and the
// reference-count file) is the caller's business: npudist.device.ipc passes
// them with multiprocessing.reduction.DupFd (SCM_RIGHTS over a Unix socket).
#pragma once

#include <c10/core/Storage.h>

#include <cstdint>
#include <utility>
#include <vector>

namespace npudist::core::ipc {

struct ExportedStorage {
  int64_t device = 0;
  int mem_fd = -1;                                 // owned by the driver: dup before passing on
  std::vector<std::pair<size_t, size_t>> extents;  // (file offset, bytes) of the mapped range
  size_t offset = 0;                               // storage start inside the mapped range
  size_t nbytes = 0;
  int counter_fd = -1;         // owned by this module: dup before passing on
  uint64_t counter_token = 0;  // identifies the counter file (random)
  int64_t slot = 0;            // this storage's counter in that file
  uint64_t entry_id = 0;       // unique per exported storage in this process
};

// Exports `storage` (npu, non-empty) and counts one more consumer reference.
// Each call must be matched by exactly one importStorage somewhere (or the
// storage stays held until this process exits). Runs collect() first.
ExportedStorage exportStorage(const c10::Storage& storage);

// Maps an exported storage into this process (on npu `device`); the returned
// storage is not resizable, and its deleter releases the mapping and drops
// the reference. The fds may be closed after the call.
c10::Storage importStorage(int64_t device, int mem_fd, const std::vector<std::pair<size_t, size_t>>& extents,
                           size_t offset, size_t nbytes, int counter_fd, uint64_t counter_token, int64_t slot);

// Drops the exporter's hold on storages no consumer references any more.
// Returns the number of exported storages still referenced by consumers.
size_t collect();

// Drops one consumer reference without importing (a receiver that already
// holds the same storage, or one that failed to map it).
void releaseReference(int counter_fd, uint64_t counter_token, int64_t slot);

// Where [p, p+bytes) lies in this process's npu memory: its device, the
// device's memory file (fd owned by the driver) and the file offset of p.
// False if the range is not npu memory backed by one contiguous file extent
// (cpu memory, imported memory, an expandable segment split across chunks).
// Used by hccl's zero-copy collectives; takes the driver's device lock.
bool locate(const void* p, size_t bytes, int* device, int* fd, size_t* file_offset);

}  // namespace npudist::core::ipc
