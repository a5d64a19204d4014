// Zero-copy bridges between npu tensors and CPU tensors over the same memory.
// npu memory is host memory, so PyTorch's CPU kernels can run on it directly.
#pragma once

#include <ATen/core/Tensor.h>

#include <optional>

namespace npudist::core {

// A CPU storage over the memory of npu storage `s`, keeping `s` alive. It is
// resizable through the CPU (redirecting) allocator, so a kernel that resizes
// it while RedirectToNpu is active lands in npu memory (see syncStorageBack).
c10::Storage aliasStorageAsCpu(const c10::Storage& s);

// A CPU tensor over `storage` (from aliasStorageAsCpu) with t's sizes,
// strides, offset and conj/neg bits.
at::Tensor cpuTensorOver(c10::Storage storage, const at::Tensor& t);

// Both at once, for a single tensor.
at::Tensor aliasAsCpu(const at::Tensor& t);

// aliasAsCpu(t) for an npu tensor; a cpu or undefined tensor as it is (kernels whose arguments may be either).
inline at::Tensor cpuOrAlias(const at::Tensor& t) { return t.defined() && t.is_privateuseone() ? aliasAsCpu(t) : t; }
inline std::optional<at::Tensor> cpuOrAlias(const std::optional<at::Tensor>& t) {
  return t && t->defined() ? std::optional<at::Tensor>(cpuOrAlias(*t)) : std::nullopt;
}

// Makes a CPU result of a kernel run under RedirectToNpu an npu tensor
// without copying (its memory is npu memory); copies only memory the
// redirect did not see. Zero tensors (no memory) are rebuilt on npu.
at::Tensor adoptCpuResult(const at::Tensor& t, c10::DeviceIndex device);

// After a CPU kernel ran on aliases: if it resized the alias of npu storage
// `npu`, move the new memory into `npu` (every view of it sees the resize).
void syncStorageBack(c10::StorageImpl* npu, const c10::Storage& alias);

// Then, for an npu tensor written through `alias`: if the kernel re-pointed
// or reshaped the alias, make `npu` follow.
void syncTensorBack(const at::Tensor& npu, const at::Tensor& alias, c10::StorageImpl* alias_storage);

// `storage` as an npu storage: retagged in place when its memory is npu
// memory, else copied into npu memory.
c10::Storage adoptStorage(c10::Storage storage, c10::DeviceIndex device);

// True if the storage's memory came from the npu allocator.
bool isNpuMemory(const c10::Storage& storage);

// Turns a CPU storage whose memory is npu memory into an npu storage in place.
void retagAsNpu(const c10::Storage& storage, c10::DeviceIndex device);

// An npu tensor over `storage` (already npu) with the metadata of `like`.
at::Tensor npuTensorOver(c10::Storage storage, const at::Tensor& like);

}  // namespace npudist::core
