#include "core/allocator/alloc_config.h"

#include <c10/util/Exception.h>

#include <cctype>
#include <cstdlib>
#include <sstream>

#include "util/env.h"

namespace npudist::core {
namespace {

std::string trim(const std::string& s) {
  size_t b = s.find_first_not_of(" \t");
  if (b == std::string::npos) return "";
  return s.substr(b, s.find_last_not_of(" \t") - b + 1);
}

double number(const std::string& key, const std::string& value) {
  char* end = nullptr;
  double v = std::strtod(value.c_str(), &end);
  TORCH_CHECK_VALUE(!value.empty() && end && *end == '\0', "PYTORCH_NPU_ALLOC_CONF: ", key, " expects a number, got '",
                    value, "'");
  return v;
}

bool boolean(const std::string& key, const std::string& value) {
  if (value == "True" || value == "true" || value == "1") return true;
  if (value == "False" || value == "false" || value == "0") return false;
  TORCH_CHECK_VALUE(false, "PYTORCH_NPU_ALLOC_CONF: ", key, " expects True or False, got '", value, "'");
}

}  // namespace

AllocConfig parseAllocConfig(const std::string& text) {
  AllocConfig cfg;
  bool has_max_split = false;
  std::stringstream ss(text);
  std::string entry;
  while (std::getline(ss, entry, ',')) {
    entry = trim(entry);
    if (entry.empty()) continue;
    size_t colon = entry.find(':');
    TORCH_CHECK_VALUE(colon != std::string::npos, "PYTORCH_NPU_ALLOC_CONF: entry '", entry,
                      "' is not key:value (e.g. expandable_segments:True)");
    std::string key = trim(entry.substr(0, colon));
    std::string value = trim(entry.substr(colon + 1));
    if (key == "expandable_segments") {
      cfg.expandable_segments = boolean(key, value);
    } else if (key == "max_split_size_mb") {
      double mb = number(key, value);
      TORCH_CHECK_VALUE(mb > 20, "PYTORCH_NPU_ALLOC_CONF: max_split_size_mb must be more than 20, got ", value);
      cfg.max_split_size = size_t(mb * 1024 * 1024);
      has_max_split = true;
    } else if (key == "garbage_collection_threshold") {
      double t = number(key, value);
      TORCH_CHECK_VALUE(t > 0 && t < 1, "PYTORCH_NPU_ALLOC_CONF: garbage_collection_threshold must be in (0, 1), got ",
                        value);
      cfg.garbage_collection_threshold = t;
    } else if (key == "roundup_power2_divisions") {
      TORCH_CHECK_VALUE(value.empty() || value[0] != '[',
                        "PYTORCH_NPU_ALLOC_CONF: roundup_power2_divisions takes one power of 2 here; the per-size "
                        "list form [size:divisions,...] is not supported");
      double n = number(key, value);
      size_t d = size_t(n);
      TORCH_CHECK_VALUE(n >= 1 && double(d) == n && (d & (d - 1)) == 0,
                        "PYTORCH_NPU_ALLOC_CONF: roundup_power2_divisions must be a power of 2, got ", value);
      cfg.roundup_power2_divisions = d;
    } else if (key == "per_process_memory_fraction") {
      double f = number(key, value);
      TORCH_CHECK_VALUE(f > 0 && f <= 1, "PYTORCH_NPU_ALLOC_CONF: per_process_memory_fraction must be in (0, 1], got ",
                        value);
      cfg.per_process_memory_fraction = f;
    } else {
      TORCH_CHECK_VALUE(false, "PYTORCH_NPU_ALLOC_CONF: unknown key '", key,
                        "'; known keys: expandable_segments, max_split_size_mb, garbage_collection_threshold, "
                        "roundup_power2_divisions, per_process_memory_fraction");
    }
  }
  TORCH_CHECK_VALUE(!(cfg.expandable_segments && has_max_split),
                    "PYTORCH_NPU_ALLOC_CONF: expandable_segments:True cannot be combined with max_split_size_mb "
                    "(expandable segments do not fragment, so there is nothing to limit); drop one of them");
  return cfg;
}

const AllocConfig& allocConfig() {
  static const AllocConfig cfg = [] { return parseAllocConfig(env::getString("PYTORCH_NPU_ALLOC_CONF", "")); }();
  return cfg;
}

}  // namespace npudist::core
