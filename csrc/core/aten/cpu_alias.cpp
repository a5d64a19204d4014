#include "core/aten/cpu_alias.h"

#include <c10/core/StorageImpl.h>
#include <c10/core/TensorImpl.h>
#include <c10/util/intrusive_ptr.h>

#include "core/allocator/cpu_redirect.h"
#include "core/allocator/simple_allocator.h"
#include "core/device.h"

namespace npudist::core {
namespace {

void releaseStorage(void* ctx) { c10::raw::intrusive_ptr::decref(static_cast<c10::StorageImpl*>(ctx)); }

void copyMetadata(c10::TensorImpl* dst, const at::Tensor& like) {
  dst->set_sizes_and_strides(like.sizes(), like.strides(), like.storage_offset());
  dst->_set_conj(like.is_conj());
  dst->_set_neg(like.is_neg());
}

}  // namespace

at::Tensor aliasAsCpu(const at::Tensor& t) {
  c10::StorageImpl* orig = t.storage().unsafeGetStorageImpl();
  c10::raw::intrusive_ptr::incref(orig);
  void* data = const_cast<void*>(orig->data());
  c10::DataPtr dp(data, orig, &releaseStorage, c10::Device(c10::DeviceType::CPU));
  auto storage = c10::make_intrusive<c10::StorageImpl>(c10::StorageImpl::use_byte_size_t(), orig->nbytes(),
                                                       std::move(dp), cpuRedirectAllocator(), /*resizable=*/true);
  auto impl = c10::make_intrusive<c10::TensorImpl>(c10::Storage(std::move(storage)),
                                                   c10::DispatchKeySet(c10::DispatchKey::CPU), t.dtype());
  copyMetadata(impl.get(), t);
  return at::Tensor(std::move(impl));
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
  auto impl = c10::make_intrusive<c10::TensorImpl>(std::move(storage),
                                                   c10::DispatchKeySet(c10::DispatchKey::PrivateUse1), like.dtype());
  copyMetadata(impl.get(), like);
  return at::Tensor(std::move(impl));
}

void syncBack(const at::Tensor& npu, const at::Tensor& alias, c10::StorageImpl* alias_storage) {
  c10::TensorImpl* impl = npu.unsafeGetTensorImpl();
  c10::StorageImpl* now = alias.storage().unsafeGetStorageImpl();
  c10::DeviceIndex device = npu.device().index();
  if (now == alias_storage) {
    if (now->data() != npu.storage().data()) {
      // The kernel resized the alias's storage: the new memory came from the
      // npu allocator (redirect active); move it into the npu storage so
      // every view of it sees the resize.
      TORCH_INTERNAL_ASSERT(isNpuMemory(alias.storage()) || now->nbytes() == 0);
      c10::StorageImpl* target = npu.storage().unsafeGetStorageImpl();
      c10::DataPtr moved = std::move(now->mutable_data_ptr());
      moved.unsafe_set_device(npuDevice(device));
      target->set_nbytes(now->nbytes());
      target->set_data_ptr_noswap(std::move(moved));
    }
  } else {
    // The kernel pointed the alias at another storage (set_ / out= reuse).
    c10::Storage adopted = alias.storage();
    if (isNpuMemory(adopted) || adopted.nbytes() == 0) {
      retagAsNpu(adopted, device);
    } else {
      c10::Storage copy(c10::Storage::use_byte_size_t(), adopted.nbytes(),
                        npuAllocator().allocateOn(device, adopted.nbytes()), &npuAllocator(), true);
      std::memcpy(copy.mutable_data(), adopted.data(), adopted.nbytes());
      adopted = std::move(copy);
    }
    impl->set_storage_keep_dtype(std::move(adopted));
  }
  if (npu.sizes() != alias.sizes() || npu.strides() != alias.strides() ||
      npu.storage_offset() != alias.storage_offset()) {
    impl->set_sizes_and_strides(alias.sizes(), alias.strides(), alias.storage_offset());
  }
}

}  // namespace npudist::core
