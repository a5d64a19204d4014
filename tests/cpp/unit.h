// A minimal unit-test harness of ours (no googletest): TEST(name) registers a
// function, CHECK(cond) records a failure with file and line and continues,
// REQUIRE(cond) stops the test. main() runs every test (or those named on the
// command line), prints "PASS name" / "FAIL name: ..." lines and returns the
// number of failed tests. tests/cpp/test_cpp_units.py builds and runs it.
#pragma once

#include <cstdio>
#include <functional>
#include <sstream>
#include <string>
#include <vector>

namespace unit {

struct Case {
  const char* name;
  std::function<void()> fn;
};

inline std::vector<Case>& registry() {
  static std::vector<Case> cases;
  return cases;
}

inline std::vector<std::string>& failures() {
  static std::vector<std::string> f;
  return f;
}

struct Stop {};  // thrown by REQUIRE to end the current test

struct Register {
  Register(const char* name, std::function<void()> fn) { registry().push_back({name, std::move(fn)}); }
};

inline void fail(const char* file, int line, const std::string& what) {
  std::ostringstream s;
  s << file << ":" << line << ": " << what;
  failures().push_back(s.str());
}

}  // namespace unit

#define UNIT_CAT2(a, b) a##b
#define UNIT_CAT(a, b) UNIT_CAT2(a, b)
#define TEST(name)                                                          \
  static void unit_test_##name();                                           \
  static unit::Register UNIT_CAT(unit_reg_, name)(#name, unit_test_##name); \
  static void unit_test_##name()
#define CHECK(cond)                                                  \
  do {                                                               \
    if (!(cond)) unit::fail(__FILE__, __LINE__, "CHECK(" #cond ")"); \
  } while (0)
#define CHECK_EQ(a, b)                                                        \
  do {                                                                        \
    auto unit_a = (a);                                                        \
    auto unit_b = (b);                                                        \
    if (!(unit_a == unit_b)) {                                                \
      std::ostringstream unit_s;                                              \
      unit_s << "CHECK_EQ(" #a ", " #b "): " << +unit_a << " != " << +unit_b; \
      unit::fail(__FILE__, __LINE__, unit_s.str());                           \
    }                                                                         \
  } while (0)
#define REQUIRE(cond)                                       \
  do {                                                      \
    if (!(cond)) {                                          \
      unit::fail(__FILE__, __LINE__, "REQUIRE(" #cond ")"); \
      throw unit::Stop{};                                   \
    }                                                       \
  } while (0)

// Defines main(); include from exactly one translation unit of a test binary.
#define UNIT_MAIN()                                                                       \
  int main(int argc, char** argv) {                                                       \
    int failed = 0, ran = 0;                                                              \
    for (auto& c : unit::registry()) {                                                    \
      bool wanted = argc < 2;                                                             \
      for (int i = 1; i < argc; ++i) wanted = wanted || std::string(argv[i]) == c.name;   \
      if (!wanted) continue;                                                              \
      ++ran;                                                                              \
      unit::failures().clear();                                                           \
      try {                                                                               \
        c.fn();                                                                           \
      } catch (const unit::Stop&) {                                                       \
      } catch (const std::exception& e) {                                                 \
        unit::failures().push_back(std::string("exception: ") + e.what());                \
      }                                                                                   \
      if (unit::failures().empty()) {                                                     \
        std::printf("PASS %s\n", c.name);                                                 \
      } else {                                                                            \
        ++failed;                                                                         \
        for (auto& f : unit::failures()) std::printf("FAIL %s: %s\n", c.name, f.c_str()); \
      }                                                                                   \
      std::fflush(stdout);                                                                \
    }                                                                                     \
    std::printf("%d tests, %d failed\n", ran, failed);                                    \
    return failed;                                                                        \
  }
