#include "core/aten/cpu_alias.h"

#include <c10/core/StorageImpl.h>
#include <c10/core/TensorImpl.h>
#include <c10/util/intrusive_ptr.h>

#include "core/allocator/cpu_redirect.h"
#include "core/allocator/caching_allocator.h"
#include "core/device.h"

#include <ATen/ops/_efficientzerotensor.h>
#include <ATen/quantized/QTensorImpl.h>

#include <cstring>

namespace npudist::core {
namespace {

void releaseStorage(void* ctx) { c10::raw::intrusive_ptr::decref(static_cast<c10::StorageImpl*>(ctx)); }

void copyMetadata(c10::TensorImpl* dst, const at::Tensor& like) {
  dst->set_sizes_and_strides(like.sizes(), like.strides(), like.storage_offset());
  dst->_set_conj(like.is_conj());
  dst->_set_neg(like.is_neg());
}

}  // namespace

c10::Storage aliasStorageAsCpu(const c10::Storage& s) {
  c10::StorageImpl* orig = s.unsafeGetStorageImpl();
  c10::raw::intrusive_ptr::incref(orig);
  void* data = const_cast<void*>(orig->data());
  c10::DataPtr dp(data, orig, &releaseStorage, c10::Device(c10::DeviceType::CPU));
  return c10::Storage(c10::make_intrusive<c10::StorageImpl>(c10::StorageImpl::use_byte_size_t(), orig->nbytes(),
                                                            std::move(dp), cpuRedirectAllocator(),
                                                            /*resizable=*/true));
}

namespace {

// A quantized tensor keeps its quantizer (scale, zero point, axis) in a
// QTensorImpl; its alias on the other device shares that quantizer, as
// QuantizedCPU and QuantizedCUDA tensors of the same values do.
c10::intrusive_ptr<c10::TensorImpl> implOver(c10::Storage storage, const at::Tensor& like, c10::DispatchKey dense,
                                             c10::DispatchKey quantized) {
  if (like.is_quantized()) {
    return c10::make_intrusive<at::QTensorImpl>(std::move(storage), c10::DispatchKeySet(quantized), like.dtype(),
                                                at::get_qtensorimpl(like)->quantizer());
  }
  return c10::make_intrusive<c10::TensorImpl>(std::move(storage), c10::DispatchKeySet(dense), like.dtype());
}

}  // namespace

at::Tensor cpuTensorOver(c10::Storage storage, const at::Tensor& t) {
  auto impl = implOver(std::move(storage), t, c10::DispatchKey::CPU, c10::DispatchKey::QuantizedCPU);
  copyMetadata(impl.get(), t);
  return at::Tensor(std::move(impl));
}

at::Tensor aliasAsCpu(const at::Tensor& t) { return cpuTensorOver(aliasStorageAsCpu(t.storage()), t); }

c10::Storage adoptStorage(c10::Storage storage, c10::DeviceIndex device) {
  if (isNpuMemory(storage) || storage.nbytes() == 0) {
    retagAsNpu(storage, device);
    return storage;
  }
  // A CPU input returned as is, or memory allocated on another thread.
  size_t nbytes = storage.nbytes();
  c10::Storage copy(c10::Storage::use_byte_size_t(), nbytes, npuAllocator().allocateOn(device, nbytes), &npuAllocator(),
                    true);
  if (nbytes && storage.data()) std::memcpy(copy.mutable_data(), storage.data(), nbytes);
  return copy;
}

at::Tensor adoptCpuResult(const at::Tensor& t, c10::DeviceIndex device) {
  if (t._is_zerotensor()) {
    return at::_efficientzerotensor(t.sizes(), t.options().device(npuDevice(device)));
  }
  return npuTensorOver(adoptStorage(t.storage(), device), t);
}

bool isNpuMemory(const c10::Storage& storage) {
  return storage.data_ptr().get_deleter() == npuAllocator().raw_deleter();
}

void retagAsNpu(const c10::Storage& storage, c10::DeviceIndex device) {
  c10::StorageImpl* s = storage.unsafeGetStorageImpl();
  s->mutable_data_ptr().unsafe_set_device(npuDevice(device));
  s->set_allocator(&npuAllocator());
}

at::Tensor npuTensorOver(c10::Storage storage, const at::Tensor& like) {
  auto impl = implOver(std::move(storage), like, c10::DispatchKey::PrivateUse1, c10::DispatchKey::QuantizedPrivateUse1);
  copyMetadata(impl.get(), like);
  return at::Tensor(std::move(impl));
}

void syncStorageBack(c10::StorageImpl* npu, const c10::Storage& alias) {
  c10::StorageImpl* cpu = alias.unsafeGetStorageImpl();
  if (cpu->data() == npu->data() && cpu->nbytes() == npu->nbytes()) return;
  // The kernel resized the alias storage: its new memory came from the npu
  // allocator (redirect active). Move it into the npu storage so every view
  // of it sees the resize.
  TORCH_INTERNAL_ASSERT(isNpuMemory(alias) || cpu->nbytes() == 0);
  c10::DataPtr moved = std::move(cpu->mutable_data_ptr());
  moved.unsafe_set_device(npu->device());
  npu->set_nbytes(cpu->nbytes());
  npu->set_data_ptr_noswap(std::move(moved));
}

void syncTensorBack(const at::Tensor& npu, const at::Tensor& alias, c10::StorageImpl* alias_storage) {
  c10::TensorImpl* impl = npu.unsafeGetTensorImpl();
  if (alias.storage().unsafeGetStorageImpl() != alias_storage) {
    // The kernel pointed the alias at another storage (set_ / out= reuse).
    impl->set_storage_keep_dtype(adoptStorage(alias.storage(), npu.device().index()));
  }
  if (npu.sizes() != alias.sizes() || npu.strides() != alias.strides() ||
      npu.storage_offset() != alias.storage_offset()) {
    impl->set_sizes_and_strides(alias.sizes(), alias.strides(), alias.storage_offset());
  }
}

}  // namespace npudist::core
