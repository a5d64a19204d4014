// Calling a compiled C kernel through its address (torch.compile's kernels).
//
// Inductor's C++ kernels for npu (the CPU code generator on npu memory) are
// `extern "C" void kernel(...)` functions whose parameters are all pointers or
// int64_t. The npu launcher (bindings: _NpuKernel) calls them through their
// address so that a capture can record the call as a graph node and replay
// it from C++. On LP64 ABIs (x86-64 System V, AArch64) pointer and int64_t
// parameters are passed identically, so every such kernel can be called as
// `void(intptr_t, ..., intptr_t)`; kernels with floating-point parameters
// cannot, and the launcher refuses them (they are never built this way).
#pragma once

#include <cstddef>
#include <cstdint>

namespace npudist::core::graph {

// Largest number of arguments callKernel supports.
constexpr size_t kMaxKernelArgs = 192;

// Calls fn(args[0], ..., args[n-1]); n <= kMaxKernelArgs (checked).
void callKernel(void* fn, const intptr_t* args, size_t n);

}  // namespace npudist::core::graph
