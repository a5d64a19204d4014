// The npu's implementation of PyTorch's profiler stubs (the legacy profiler's
// device events, use_kineto=False); registered in register.cpp.
#pragma once

#include <torch/csrc/profiler/stubs/base.h>

namespace npudist::profiler {

torch::profiler::impl::ProfilerStubs* npuProfilerStubs();

}  // namespace npudist::profiler
