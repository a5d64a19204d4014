// The npu's Kineto activity profiler: what torch.profiler's PrivateUse1
// activity drives (registered in register.cpp with PyTorch's
// REGISTER_PRIVATEUSE1_PROFILER, torch/csrc/profiler/standalone/privateuse1_profiler.h).
//
// Only this TU pair and register.cpp see Kineto's headers; they need
// USE_KINETO defined (the wheel's libtorch is built with Kineto, but an
// extension build does not define the macro).
#pragma once

// GenericTraceActivity::addMetadata formats with fmt, which libtorch does not
// export: compile fmt into this TU.
#ifndef FMT_HEADER_ONLY
#define FMT_HEADER_ONLY 1
#endif
#ifndef USE_KINETO
#define USE_KINETO 1
#endif

#include <IActivityProfiler.h>

#include <set>
#include <string>

namespace npudist::profiler {

class NpuActivityProfiler : public libkineto::IActivityProfiler {
 public:
  const std::string& name() const override;
  const std::set<libkineto::ActivityType>& availableActivities() const override;
  std::unique_ptr<libkineto::IActivityProfilerSession> configure(
      const std::set<libkineto::ActivityType>& activity_types, const libkineto::Config& config) override;
  std::unique_ptr<libkineto::IActivityProfilerSession> configure(
      int64_t ts_ms, int64_t duration_ms, const std::set<libkineto::ActivityType>& activity_types,
      const libkineto::Config& config) override;
};

// How many Kineto sessions of ours were configured in this process (tests read
// it to tell "no device events" from "the profiler was never asked").
int64_t sessionsConfigured();

}  // namespace npudist::profiler
