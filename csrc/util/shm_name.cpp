#include "util/shm_name.h"

#include <cstdio>

namespace npudist::shm {

uint64_t fnv1a64(const std::string& bytes) {
  uint64_t h = 0xcbf29ce484222325ULL;
  for (unsigned char c : bytes) {
    h ^= c;
    h *= 0x100000001b3ULL;
  }
  return h;
}

std::string jobComponent(const std::string& job_tag) {
  std::string out;
  out.reserve(job_tag.size());
  for (char ch : job_tag) {
    const bool ok =
        (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') || ch == '.' || ch == '_';
    out += ok ? ch : '_';
  }
  if (out.empty()) return "job";
  if (out.size() <= kMaxJobComponent) return out;
  char hash[17];
  std::snprintf(hash, sizeof(hash), "%016llx", static_cast<unsigned long long>(fnv1a64(job_tag)));
  return out.substr(0, kMaxJobComponent - 13) + "." + std::string(hash, 12);
}

std::string jobPrefix(const std::string& job_tag) { return "npudist-" + jobComponent(job_tag) + "-"; }

}  // namespace npudist::shm
