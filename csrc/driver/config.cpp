#include "driver/config.h"

#include "util/env.h"

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <set>
#include <sstream>

namespace npudist::driver {
namespace {

constexpr size_t kGiB = size_t(1) << 30;
constexpr int kDefaultDeviceCount = 8;
constexpr int kMaxDeviceCount = 64;
constexpr size_t kMaxDefaultMemory = 64 * kGiB;
constexpr size_t kMinMemory = size_t(2) << 20;  // the driver's granularity
constexpr size_t kMaxMemory = 4096 * kGiB;      // 4 TiB: keeps every device's window in the address space
// Mappings up to this size are backed by 2 MiB pages by default: covers the caching allocator's
// 20 MiB large-pool segments, expandable segments' 2 MiB granules and tensors of up to 64 MiB,
// while a huge, possibly never-touched allocation is not committed up front.
constexpr size_t kDefaultHugePageMax = size_t(64) << 20;

std::string trim(const std::string& s) {
  size_t b = s.find_first_not_of(" \t\n");
  if (b == std::string::npos) return "";
  size_t e = s.find_last_not_of(" \t\n");
  return s.substr(b, e - b + 1);
}

bool parseInt(const std::string& text, long* out) {
  std::string t = trim(text);
  if (t.empty()) return false;
  size_t i = 0;
  if (t[0] == '-' || t[0] == '+') i = 1;
  if (i == t.size()) return false;
  for (size_t k = i; k < t.size(); ++k)
    if (!std::isdigit(static_cast<unsigned char>(t[k]))) return false;
  errno = 0;
  long v = std::strtol(t.c_str(), nullptr, 10);
  if (errno != 0) return false;
  *out = v;
  return true;
}

size_t hostMemoryBytes() {
  long pages = sysconf(_SC_PHYS_PAGES);
  long page = sysconf(_SC_PAGESIZE);
  return pages > 0 && page > 0 ? size_t(pages) * size_t(page) : 16 * kGiB;
}

ClusterConfig load() {
  ClusterConfig cfg;
  std::ostringstream err;

  cfg.physical_device_count = kDefaultDeviceCount;
  try {
    cfg.physical_device_count = int(env::getInt("NPUDIST_DEVICE_COUNT", kDefaultDeviceCount, 1, kMaxDeviceCount));
  } catch (const env::EnvError& e) {
    cfg.error = e.what();  // raised by the first call that needs the devices
    return cfg;
  }

  size_t share = size_t(double(hostMemoryBytes()) * 0.8) / size_t(cfg.physical_device_count);
  cfg.device_memory = std::max(kMinMemory, std::min(share, kMaxDefaultMemory) / kMinMemory * kMinMemory);
  if (auto v = env::raw("NPUDIST_DEVICE_MEMORY")) {
    std::string why;
    size_t bytes = 0;
    if (!parseMemorySize(*v, &bytes, &why)) {
      err << env::invalidMessage("NPUDIST_DEVICE_MEMORY", *v,
                                 "bytes or a number with a binary unit from 2 MiB to 4 TiB, e.g. 4GiB, 512MiB, 2G")
          << " (" << why << ")";
      cfg.error = err.str();
      return cfg;
    }
    cfg.device_memory = bytes;
  }

  cfg.huge_page_max = kDefaultHugePageMax;
  if (auto v = env::raw("NPUDIST_DEVICE_HUGE_PAGES")) {
    std::string why;
    size_t bytes = 0;
    if (trim(*v) == "0") {
      cfg.huge_page_max = 0;
    } else if (!parseMemorySize(*v, &bytes, &why)) {
      err << env::invalidMessage("NPUDIST_DEVICE_HUGE_PAGES", *v,
                                 "0 (no huge pages) or the largest mapping backed by 2 MiB pages, e.g. 64MiB, 1GiB")
          << " (" << why << ")";
      cfg.error = err.str();
      return cfg;
    } else {
      cfg.huge_page_max = bytes;
    }
  }

  if (auto visible = env::raw("ASCEND_RT_VISIBLE_DEVICES", /*keep_empty=*/true)) {
    const std::string& v = *visible;
    std::string text = trim(v);
    std::set<int> seen;
    size_t start = 0;
    while (!text.empty() && start <= text.size()) {
      size_t comma = text.find(',', start);
      std::string item = text.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
      start = comma == std::string::npos ? text.size() + 1 : comma + 1;
      long id = 0;
      bool is_int = parseInt(item, &id);
      if (!is_int || id < 0 || id >= cfg.physical_device_count || seen.count(int(id))) {
        err << "ASCEND_RT_VISIBLE_DEVICES='" << v << "' is invalid: entry '" << trim(item) << "' ";
        if (!is_int)
          err << "is not a device id";
        else if (seen.count(int(id)))
          err << "is listed twice";
        else
          err << "is not a device of this host (ids 0.." << cfg.physical_device_count - 1 << ")";
        err << "; give distinct comma-separated ids such as 0,1,2,3";
        cfg.error = err.str();
        return cfg;
      }
      seen.insert(int(id));
      cfg.visible.push_back(int(id));
    }
  } else {
    for (int i = 0; i < cfg.physical_device_count; ++i) cfg.visible.push_back(i);
  }
  return cfg;
}

}  // namespace

bool parseMemorySize(const std::string& text, size_t* bytes, std::string* error) {
  std::string t = trim(text);
  if (!t.empty() && t[0] == '-') {
    *error = "negative";
    return false;
  }
  size_t i = 0;
  while (i < t.size() && (std::isdigit(static_cast<unsigned char>(t[i])) || t[i] == '.')) ++i;
  if (i == 0) {
    *error = "no number";
    return false;
  }
  double value = std::strtod(t.substr(0, i).c_str(), nullptr);
  std::string unit = trim(t.substr(i));
  std::transform(unit.begin(), unit.end(), unit.begin(), [](unsigned char c) { return std::tolower(c); });
  double mult;
  if (unit.empty() || unit == "b")
    mult = 1;
  else if (unit == "k" || unit == "kb" || unit == "kib")
    mult = 1024.0;
  else if (unit == "m" || unit == "mb" || unit == "mib")
    mult = 1024.0 * 1024;
  else if (unit == "g" || unit == "gb" || unit == "gib")
    mult = double(kGiB);
  else if (unit == "t" || unit == "tb" || unit == "tib")
    mult = double(kGiB) * 1024;
  else {
    *error = "unknown unit '" + unit + "'";
    return false;
  }
  double total = value * mult;
  if (total < double(kMinMemory)) {
    *error = "less than 2 MiB, the allocation granularity";
    return false;
  }
  if (total > double(kMaxMemory)) {
    *error = "more than 4 TiB";
    return false;
  }
  // Capacity is whole 2 MiB granules: physical memory is handed out in them.
  *bytes = size_t(total) / kMinMemory * kMinMemory;
  return true;
}

const ClusterConfig& clusterConfig() {
  static const ClusterConfig cfg = load();
  return cfg;
}

}  // namespace npudist::driver
