// The one reader of environment variables in the extension (docs/env_vars.md).
//
// Every variable is read through these functions, so every variable parses the
// same way: unset or empty means the default; anything else must be a valid
// value, or the read throws EnvError (a std::invalid_argument: pybind11 and
// torch turn it into a Python ValueError / RuntimeError) whose message names
// the variable, the value given and the values allowed. Nothing is ignored
// with a warning and nothing falls back silently.
//
// Booleans accept 1/0, true/false, yes/no, on/off (any case), as PyTorch's
// own TORCH_* flags do. Read values on a user thread (where an exception
// reaches the caller), never first on a background thread.
//
// The Python mirror is npudist/_env.py; keep the two in step.
#pragma once

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace npudist::env {

struct EnvError : std::invalid_argument {
  using std::invalid_argument::invalid_argument;
};

// The raw value; nullopt when unset, and when empty unless `keep_empty`
// (ASCEND_RT_VISIBLE_DEVICES="" means "no device", not "all").
std::optional<std::string> raw(const char* name, bool keep_empty = false);

// The value as given, or `def` when unset or empty.
std::string getString(const char* name, const std::string& def);

bool getBool(const char* name, bool def);

// A whole number in [lo, hi] (decimal; surrounding spaces allowed).
int64_t getInt(const char* name, int64_t def, int64_t lo, int64_t hi);

// A finite number in [lo, hi].
double getFloat(const char* name, double def, double lo, double hi);

// One of `allowed` (exact match, case-sensitive); `def` when unset or empty.
std::string getChoice(const char* name, const std::string& def, const std::vector<std::string>& allowed);

// The message EnvError carries: "NAME='value' is not valid: expected <what>".
std::string invalidMessage(const char* name, const std::string& value, const std::string& expected);

}  // namespace npudist::env
