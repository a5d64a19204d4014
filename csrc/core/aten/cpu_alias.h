// Zero-copy bridges between npu tensors and CPU tensors over the same memory.
// npu memory is host memory, so PyTorch's CPU kernels can run on it directly.
#pragma once

#include <ATen/core/Tensor.h>

namespace npudist::core {

// A CPU tensor viewing exactly the memory, sizes, strides, offset and
// conj/neg bits of npu tensor `t`. It keeps t's storage alive. Its storage is
// resizable through the CPU (redirecting) allocator, so a kernel that resizes
// it while RedirectToNpu is active lands in npu memory (see syncBack).
at::Tensor aliasAsCpu(const at::Tensor& t);

// After a CPU kernel wrote through `alias` (from aliasAsCpu(npu)): if the kernel
// resized or re-pointed the alias, make `npu` follow (same memory, new shape).
void syncBack(const at::Tensor& npu, const at::Tensor& alias, c10::StorageImpl* alias_storage);

// True if the storage's memory came from the npu allocator.
bool isNpuMemory(const c10::Storage& storage);

// Turns a CPU storage whose memory is npu memory into an npu storage in place.
void retagAsNpu(const c10::Storage& storage, c10::DeviceIndex device);

// An npu tensor over `storage` (already npu) with the metadata of `like`.
at::Tensor npuTensorOver(c10::Storage storage, const at::Tensor& like);

}  // namespace npudist::core
