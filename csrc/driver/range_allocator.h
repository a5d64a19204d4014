// First-fit allocator of [offset, offset+size) ranges inside a fixed span.
// HostDriver uses it twice per device: for the device's virtual-address
// window and for offsets in the device's physical-memory file. Not
// thread-safe; the caller holds the device lock.
#pragma once

#include <cstddef>
#include <iterator>
#include <map>

namespace npudist::driver {

class RangeAllocator {
 public:
  explicit RangeAllocator(size_t span = 0) { reset(span); }

  void reset(size_t span) {
    free_.clear();
    if (span) free_[0] = span;
  }

  // Returns false when no free range of `size` exists.
  bool allocate(size_t size, size_t* offset) {
    for (auto it = free_.begin(); it != free_.end(); ++it) {
      if (it->second < size) continue;
      *offset = it->first;
      size_t rest = it->second - size;
      size_t rest_at = it->first + size;
      free_.erase(it);
      if (rest) free_[rest_at] = rest;
      return true;
    }
    return false;
  }

  // Returns a range; merges it with free neighbours.
  void release(size_t offset, size_t size) {
    auto next = free_.lower_bound(offset);
    if (next != free_.begin()) {
      auto prev = std::prev(next);
      if (prev->first + prev->second == offset) {
        offset = prev->first;
        size += prev->second;
        free_.erase(prev);
      }
    }
    if (next != free_.end() && offset + size == next->first) {
      size += next->second;
      free_.erase(next);
    }
    free_[offset] = size;
  }

 private:
  std::map<size_t, size_t> free_;  // offset -> size
};

}  // namespace npudist::driver
