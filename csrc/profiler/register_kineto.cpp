// Registers the npu activity profiler with PyTorch (static initialisation of
// the extension): torch forwards the factory to Kineto when Kineto starts.
#include "profiler/kineto_profiler.h"

#include <torch/csrc/profiler/standalone/privateuse1_profiler.h>

namespace npudist::profiler {

REGISTER_PRIVATEUSE1_PROFILER(NpuActivityProfiler);

}  // namespace npudist::profiler
