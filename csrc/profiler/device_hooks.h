// What the device core's hooks put in an npu device event (names and fields),
// kept here so the hooks in csrc/core stay one or two lines.
#pragma once

#include <ATen/core/Tensor.h>
#include <ATen/core/ivalue.h>

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

// For a step trace (stepTrace()): the kernel's arguments, before it runs, as
// torch.profiler's record_shapes names them ("Input Dims", "Input type",
// "Input Strides", "Concrete Inputs": one entry per schema argument, JSON) and
// "bytes read" (the tensor arguments' elements x element size).
void describeKernelInputs(DeviceScope& scope, const c10::IValue* args, size_t n);
// ... and its results after it ran: "Output Dims", "Output type", "bytes written"
// (the returned tensors' bytes; an in-place op returns what it wrote).
void describeKernelOutputs(DeviceScope& scope, const c10::IValue* rets, size_t n);

// "npu graph replay" with the number of recorded nodes it runs.
void describeGraphReplay(DeviceScope& scope, size_t nodes);

}  // namespace npudist::profiler
