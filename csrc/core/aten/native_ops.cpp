#include "core/aten/native_ops.h"

#include <ATen/EmptyTensor.h>
#include <ATen/native/Resize.h>
#include <ATen/ops/_local_scalar_dense.h>
#include <ATen/ops/resize_native.h>
#include <ATen/ops/set_native.h>
#include <c10/core/DeviceGuard.h>

#include <cstring>

#include "core/allocator/caching_allocator.h"
#include "core/aten/cpu_alias.h"
#include "core/device.h"
#include "core/graph/capture.h"
#include "core/stream.h"
#include "profiler/device_hooks.h"

namespace npudist::core {
namespace {

constexpr c10::DispatchKeySet kNpuKeys(c10::DispatchKey::PrivateUse1);

c10::DeviceIndex targetDevice(std::optional<at::Device> device) {
  c10::DeviceIndex index = device && device->has_index() ? device->index() : currentDevice();
  checkDeviceIndex(index);
  return index;
}

void checkFactoryArgs(std::optional<at::Layout> layout, std::optional<bool> pin_memory) {
  TORCH_CHECK(!layout || *layout == at::Layout::Strided, "npu tensors support only the strided layout, got ", *layout);
  TORCH_CHECK(!pin_memory || !*pin_memory,
              "pin_memory=True applies to CPU tensors only; npu tensors are device memory already");
}

at::Tensor cpuView(const at::Tensor& t) { return t.is_privateuseone() ? aliasAsCpu(t) : t; }

}  // namespace

at::Tensor empty_memory_format(at::IntArrayRef size, std::optional<at::ScalarType> dtype,
                               std::optional<at::Layout> layout, std::optional<at::Device> device,
                               std::optional<bool> pin_memory, std::optional<at::MemoryFormat> memory_format) {
  checkFactoryArgs(layout, pin_memory);
  c10::DeviceIndex index = targetDevice(device);
  c10::OptionalDeviceGuard guard;
  if (index != currentDevice()) guard.reset_device(npuDevice(index));
  return at::detail::empty_generic(size, &npuAllocator(), kNpuKeys, c10::dtype_or_default(dtype), memory_format);
}

at::Tensor empty_strided(at::IntArrayRef size, at::IntArrayRef stride, std::optional<at::ScalarType> dtype,
                         std::optional<at::Layout> layout, std::optional<at::Device> device,
                         std::optional<bool> pin_memory) {
  checkFactoryArgs(layout, pin_memory);
  c10::DeviceIndex index = targetDevice(device);
  c10::DeviceGuard guard(npuDevice(index));
  return at::detail::empty_strided_generic(size, stride, &npuAllocator(), kNpuKeys, c10::dtype_or_default(dtype));
}

namespace {
// Hands out no memory: zero tensors are never read through their pointer.
struct NoMemoryAllocator final : public c10::Allocator {
  c10::DataPtr allocate(size_t) override { return c10::DataPtr(nullptr, npuDevice(currentDevice())); }
  c10::DeleterFnPtr raw_deleter() const override { return nullptr; }
  void copy_data(void*, const void*, std::size_t) const override {}
};
}  // namespace

at::Tensor efficient_zero_tensor(at::IntArrayRef size, std::optional<at::ScalarType> dtype,
                                 std::optional<at::Layout> layout, std::optional<at::Device> device,
                                 std::optional<bool> pin_memory) {
  checkFactoryArgs(layout, pin_memory);
  c10::DeviceIndex index = targetDevice(device);
  c10::DeviceGuard guard(npuDevice(index));
  static NoMemoryAllocator no_memory;
  constexpr c10::DispatchKeySet keys =
      c10::DispatchKeySet(c10::DispatchKey::PrivateUse1) | c10::DispatchKeySet(c10::DispatchKey::ZeroTensor);
  return at::detail::empty_generic(size, &no_memory, keys, c10::dtype_or_default(dtype), std::nullopt);
}

at::Tensor copy_from(const at::Tensor& self, const at::Tensor& dst, bool /*non_blocking*/) {
  if (C10_UNLIKELY(graph::anyCapture()) && !inDeferredWork()) {
    c10::DeviceIndex d = self.is_privateuseone() ? self.device().index() : dst.device().index();
    if (graph::Capture* c = graph::captureOfCurrent(d)) {
      if (self.is_privateuseone() && dst.is_privateuseone() && self.device() == dst.device()) {
        if (self.numel()) graph::recordCopy(*c, self, dst, currentStreamId(d));
        return dst;
      }
      graph::failOnCapturingStream(
          c, c10::str("aten::copy_ from ", self.device(), " to ", dst.device(), " (a copy between cpu and npu)"));
    }
    if (!dst.is_privateuseone()) graph::checkUnsafeCall("aten::copy_ of an npu tensor to cpu");
  }
  // Copies are memcpy on host memory; non_blocking may complete at once.
  if (self.is_privateuseone()) waitCurrentStream(self.device().index());
  if (dst.is_privateuseone() && (!self.is_privateuseone() || dst.device() != self.device()))
    waitCurrentStream(dst.device().index());
  if (self.numel() == 0) return dst;
  profiler::DeviceScope timed(profiler::EventKind::kMemcpy, (self.is_privateuseone() ? self : dst).device().index());
  if (C10_UNLIKELY(timed.on())) profiler::describeCopy(timed, self, dst);
  at::Tensor src_cpu = cpuView(self);
  at::Tensor dst_cpu = cpuView(dst);
  if (src_cpu.dtype() == dst_cpu.dtype() && src_cpu.sizes() == dst_cpu.sizes() && src_cpu.is_contiguous() &&
      dst_cpu.is_contiguous() && src_cpu.is_conj() == dst_cpu.is_conj() && src_cpu.is_neg() == dst_cpu.is_neg()) {
    std::memmove(dst_cpu.data_ptr(), src_cpu.data_ptr(), src_cpu.nbytes());
  } else {
    dst_cpu.copy_(src_cpu);  // broadcasting, casts, strides, conj/neg bits
  }
  return dst;
}

at::Tensor copy_from_and_resize(const at::Tensor& self, const at::Tensor& dst) {
  dst.resize_(self.sizes());
  return copy_from(self, dst, false);
}

c10::Scalar local_scalar_dense(const at::Tensor& self) {
  if (C10_UNLIKELY(graph::anyCapture()) && !inDeferredWork()) {
    if (graph::Capture* c = graph::captureOfCurrent(self.device().index()))
      graph::failOnCapturingStream(c, "aten::_local_scalar_dense (.item(), a host read of an npu tensor)");
    graph::checkUnsafeCall("aten::_local_scalar_dense (.item(), a host read of an npu tensor)");
  }
  waitCurrentStream(self.device().index());
  return at::_local_scalar_dense(aliasAsCpu(self));
}

const at::Tensor& resize_(const at::Tensor& self, at::IntArrayRef size, std::optional<at::MemoryFormat> memory_format) {
  // PyTorch's generic resize grows the storage through storage->allocator(),
  // which allocates on the current device: make that the tensor's device.
  c10::DeviceGuard guard(self.device());
  waitCurrentStream(self.device().index());
  return at::native::resize_(self, size, memory_format);
}

at::Tensor& set_empty_(at::Tensor& self) {
  c10::DeviceGuard guard(self.device());
  c10::Storage storage(c10::Storage::use_byte_size_t(), 0, &npuAllocator(), /*resizable=*/true);
  return set_storage_offset_(self, std::move(storage), 0, {0}, {});
}

at::Tensor& set_storage_(at::Tensor& self, at::Storage source) {
  int64_t numel = int64_t(source.nbytes() / self.dtype().itemsize());
  return set_storage_offset_(self, std::move(source), 0, {numel}, {});
}

at::Tensor& set_storage_offset_(at::Tensor& self, at::Storage source, int64_t storage_offset, at::IntArrayRef size,
                                at::IntArrayRef stride) {
  TORCH_CHECK(source.device().type() == c10::DeviceType::PrivateUse1,
              "set_: expected an npu storage for an npu tensor, got a storage on ", source.device());
  c10::DeviceGuard guard(self.device());
  return at::native::set_storage_cpu_(self, std::move(source), storage_offset, size, stride);
}

void record_stream(at::Tensor& self, c10::Stream stream) {
  TORCH_CHECK(stream.device_type() == c10::DeviceType::PrivateUse1, "record_stream: expected an npu stream, got ",
              stream.device());
  TORCH_CHECK(stream.device_index() == self.device().index(), "record_stream: the stream is on ", stream.device(),
              " but the tensor on ", self.device());
  npuAllocator().recordStream(self.storage().data_ptr(), stream);
}

void resizeStorageBytes(const c10::Storage& storage, size_t nbytes) {
  c10::StorageImpl* s = storage.unsafeGetStorageImpl();
  TORCH_CHECK(s->resizable(), "Trying to resize storage that is not resizable");
  c10::DeviceIndex device = storage.device().has_index() ? storage.device().index() : currentDevice();
  waitCurrentStream(device);
  c10::DataPtr fresh = npuAllocator().allocateOn(device, nbytes);
  size_t keep = std::min(nbytes, s->nbytes());
  if (keep) std::memcpy(fresh.get(), s->data(), keep);
  s->set_data_ptr_noswap(std::move(fresh));
  s->set_nbytes(nbytes);
}

}  // namespace npudist::core
