// Pinned host memory for npu: ordinary host memory that the allocator marks
// as pinned (docs/architecture.md), so tensor.pin_memory() / is_pinned() and
// DataLoader(pin_memory=True) work as with CUDA. Copies from it are memcpy.
#pragma once

#include <c10/core/Allocator.h>

namespace npudist::core {

c10::Allocator* pinnedHostAllocator();
// True if `ptr` points into a live pinned allocation (views included).
bool isPinnedHostPtr(const void* ptr);

}  // namespace npudist::core
