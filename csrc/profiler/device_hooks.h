// What the device core's hooks put in an npu device event (names and fields),
// kept here so the hooks in csrc/core stay one or two lines.
#pragma once

#include <ATen/core/Tensor.h>

#include <string>

#include "profiler/recorder.h"

namespace npudist::profiler {

// "aten::mm (npu kernel)": the device-side event of a CPU op. Distinct from the
// op's own name, so key_averages keeps the op row and the kernel row apart
// (as CUDA kernels have their own names).
std::string kernelName(const std::string& op_name);

// Names a copy as CUDA's profiler does ("Memcpy HtoD (Host -> npu)") and adds
// its bytes and the two devices.
void describeCopy(DeviceScope& scope, const at::Tensor& src, const at::Tensor& dst);

// "npu graph replay" with the number of recorded nodes it runs.
void describeGraphReplay(DeviceScope& scope, size_t nodes);

}  // namespace npudist::profiler
