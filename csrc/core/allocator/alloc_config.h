// PYTORCH_NPU_ALLOC_CONF: the caching allocator's settings, with the keys
// torch_npu users set (same syntax as PYTORCH_CUDA_ALLOC_CONF):
//   expandable_segments:True|False
//   max_split_size_mb:N            blocks larger than N MiB are never split
//   garbage_collection_threshold:F 0<F<1: past F x the memory limit, cached
//                                  blocks are released before growing
//   roundup_power2_divisions:N     round large requests up to 1/N steps
//                                  between powers of two (N a power of 2)
//   per_process_memory_fraction:F  0<F<=1: the process may use F x capacity
// Entries are comma-separated key:value pairs. Unknown keys, bad values and
// expandable_segments together with max_split_size_mb raise ValueError.
#pragma once

#include <cstddef>
#include <string>

namespace npudist::core {

struct AllocConfig {
  bool expandable_segments = false;
  size_t max_split_size = SIZE_MAX;  // bytes
  double garbage_collection_threshold = 0;
  size_t roundup_power2_divisions = 0;
  double per_process_memory_fraction = 1.0;
};

// Parses `text`; throws c10::ValueError naming the offending entry.
AllocConfig parseAllocConfig(const std::string& text);
// The process's configuration, parsed from the environment once.
const AllocConfig& allocConfig();

}  // namespace npudist::core
