// Ops the npu backend implements itself rather than through the fallback:
// allocation, copies, resizing, set_, scalar reads, and views (left to a
// fallback, views would silently become copies).
#pragma once

#include <ATen/core/Tensor.h>
#include <c10/core/Scalar.h>

#include <optional>

namespace npudist::core {

at::Tensor empty_memory_format(at::IntArrayRef size, std::optional<at::ScalarType> dtype,
                               std::optional<at::Layout> layout, std::optional<at::Device> device,
                               std::optional<bool> pin_memory, std::optional<at::MemoryFormat> memory_format);
at::Tensor empty_strided(at::IntArrayRef size, at::IntArrayRef stride, std::optional<at::ScalarType> dtype,
                         std::optional<at::Layout> layout, std::optional<at::Device> device,
                         std::optional<bool> pin_memory);
// A zero tensor of `size` with no memory (the ZeroTensor key), as autograd
// uses for known-zero gradients.
at::Tensor efficient_zero_tensor(at::IntArrayRef size, std::optional<at::ScalarType> dtype,
                                 std::optional<at::Layout> layout, std::optional<at::Device> device,
                                 std::optional<bool> pin_memory);
at::Tensor copy_from(const at::Tensor& self, const at::Tensor& dst, bool non_blocking);
at::Tensor copy_from_and_resize(const at::Tensor& self, const at::Tensor& dst);
c10::Scalar local_scalar_dense(const at::Tensor& self);
const at::Tensor& resize_(const at::Tensor& self, at::IntArrayRef size, std::optional<at::MemoryFormat> memory_format);
at::Tensor& set_empty_(at::Tensor& self);
at::Tensor& set_storage_(at::Tensor& self, at::Storage source);
at::Tensor& set_storage_offset_(at::Tensor& self, at::Storage source, int64_t storage_offset, at::IntArrayRef size,
                                at::IntArrayRef stride);

// Tensor.record_stream: the block is not reused until `stream`'s pending
// work at the time of the free has completed (caching allocator).
void record_stream(at::Tensor& self, c10::Stream stream);

// Resizes an npu storage to `nbytes`, keeping its contents up to the smaller
// size (torch.UntypedStorage.resize_, which FSDP2 uses to free and refill).
void resizeStorageBytes(const c10::Storage& storage, size_t nbytes);

}  // namespace npudist::core
