// Simulated-cluster configuration read from the environment:
//   NPUDIST_DEVICE_COUNT      physical devices on this host (default 8)
//   NPUDIST_DEVICE_MEMORY     capacity per device, bytes or with a unit
//                             (e.g. 4GiB, 512M); default: 80% of host RAM
//                             shared equally, at most 64 GiB each
//   ASCEND_RT_VISIBLE_DEVICES comma-separated physical ids; narrows and
//                             renumbers devices as on real hardware
//   NPUDIST_DEVICE_HUGE_PAGES largest mapping of device memory backed by 2 MiB
//                             pages (a size as above, default 64MiB; 0: none)
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace npudist::driver {

struct ClusterConfig {
  int physical_device_count = 0;
  size_t device_memory = 0;  // bytes per device
  size_t huge_page_max = 0;  // mappings up to this size get 2 MiB pages (0: never)
  std::vector<int> visible;  // logical index -> physical id
  std::string error;         // non-empty when the environment is invalid
};

// Parses the environment once; the result is cached for the process.
const ClusterConfig& clusterConfig();

// Exposed for tests of the parser: parses a memory size such as "4GiB".
// Returns false and fills `error` when the text is not a size.
bool parseMemorySize(const std::string& text, size_t* bytes, std::string* error);

}  // namespace npudist::driver
