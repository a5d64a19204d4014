// Registers npu profiling with PyTorch (static initialisation of the extension):
//  - the Kineto activity profiler (REGISTER_PRIVATEUSE1_PROFILER): torch hands
//    the factory to Kineto when Kineto starts;
//  - the PrivateUse1 profiler stubs, which the legacy profiler
//    (use_kineto=False, use_device="npu") records device events with.
#include "profiler/kineto_profiler.h"

#include <torch/csrc/profiler/standalone/privateuse1_profiler.h>

#include "profiler/stubs.h"

namespace npudist::profiler {

REGISTER_PRIVATEUSE1_PROFILER(NpuActivityProfiler);

namespace {
struct RegisterStubs {
  RegisterStubs() { torch::profiler::impl::registerPrivateUse1Methods(npuProfilerStubs()); }
} g_register_stubs;
}  // namespace

}  // namespace npudist::profiler
