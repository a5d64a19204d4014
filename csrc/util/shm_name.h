// The naming rule of npudist's shared-memory entries (/dev/shm), shared by
// the engine that creates them and npurun that removes what a killed job
// left (docs/lifecycle.md, "Shared-memory names"). Python mirror:
// npudist/_shm_names.py; tests/launcher/test_shm_names.py checks they agree.
//
// An entry of job tag T is named "npudist-" + jobComponent(T) + "-" + ...;
// jobComponent is at most kMaxJobComponent characters of [A-Za-z0-9_.]
// (never '-', so the prefix of one tag never matches another's entries):
//  - the tag with every other character replaced by '_' ("job" if empty),
//  - if that is longer than kMaxJobComponent: its first 19 characters, '.',
//    and 12 hex digits of the 64-bit FNV-1a hash of the whole tag's bytes,
//    so two long tags that share a beginning still get apart.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace npudist::shm {

constexpr size_t kMaxJobComponent = 32;

std::string jobComponent(const std::string& job_tag);

// "npudist-" + jobComponent(job_tag) + "-": every entry of the job starts so.
std::string jobPrefix(const std::string& job_tag);

// 64-bit FNV-1a of `bytes` (offset basis 0xcbf29ce484222325, prime 0x100000001b3).
uint64_t fnv1a64(const std::string& bytes);

}  // namespace npudist::shm
