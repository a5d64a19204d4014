#include "util/env.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <sstream>

namespace npudist::env {
namespace {

std::string trim(const std::string& s) {
  size_t a = 0, b = s.size();
  while (a < b && std::isspace(static_cast<unsigned char>(s[a]))) ++a;
  while (b > a && std::isspace(static_cast<unsigned char>(s[b - 1]))) --b;
  return s.substr(a, b - a);
}

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return char(std::tolower(c)); });
  return s;
}

}  // namespace

std::string invalidMessage(const char* name, const std::string& value, const std::string& expected) {
  std::ostringstream os;
  os << name << "='" << value << "' is not valid: expected " << expected << " (or unset it for the default)";
  return os.str();
}

std::optional<std::string> raw(const char* name, bool keep_empty) {
  const char* v = std::getenv(name);
  if (!v || (!*v && !keep_empty)) return std::nullopt;
  return std::string(v);
}

std::string getString(const char* name, const std::string& def) {
  auto v = raw(name);
  return v ? *v : def;
}

bool getBool(const char* name, bool def) {
  auto v = raw(name);
  if (!v) return def;
  const std::string s = lower(trim(*v));
  if (s == "1" || s == "true" || s == "yes" || s == "on") return true;
  if (s == "0" || s == "false" || s == "no" || s == "off") return false;
  throw EnvError(invalidMessage(name, *v, "one of 1, 0, true, false, yes, no, on, off"));
}

int64_t getInt(const char* name, int64_t def, int64_t lo, int64_t hi) {
  auto v = raw(name);
  if (!v) return def;
  const std::string s = trim(*v);
  errno = 0;
  char* end = nullptr;
  const long long x = s.empty() ? 0 : std::strtoll(s.c_str(), &end, 10);
  if (s.empty() || !end || *end || errno == ERANGE || x < lo || x > hi) {
    std::ostringstream os;
    os << "an integer from " << lo << " to " << hi;
    throw EnvError(invalidMessage(name, *v, os.str()));
  }
  return int64_t(x);
}

double getFloat(const char* name, double def, double lo, double hi) {
  auto v = raw(name);
  if (!v) return def;
  const std::string s = trim(*v);
  char* end = nullptr;
  const double x = s.empty() ? 0 : std::strtod(s.c_str(), &end);
  if (s.empty() || !end || *end || !std::isfinite(x) || x < lo || x > hi) {
    std::ostringstream os;
    os << "a number from " << lo << " to " << hi;
    throw EnvError(invalidMessage(name, *v, os.str()));
  }
  return x;
}

std::string getChoice(const char* name, const std::string& def, const std::vector<std::string>& allowed) {
  auto v = raw(name);
  if (!v) return def;
  for (const auto& a : allowed)
    if (*v == a) return *v;
  std::ostringstream os;
  os << "one of ";
  bool first = true;
  for (const auto& a : allowed) {
    os << (first ? "" : ", ") << a;
    first = false;
  }
  throw EnvError(invalidMessage(name, *v, os.str()));
}

}  // namespace npudist::env
