#include "core/hooks.h"

#include "core/allocator/pinned_allocator.h"
#include "core/aten/native_ops.h"
#include "core/device.h"
#include "core/generator.h"
#include "driver/driver.h"

namespace npudist::core {

bool NpuHooks::isAvailable() const { return deviceCountNoThrow() > 0; }

void NpuHooks::init() const { deviceCount(); }  // raises on an invalid configuration

bool NpuHooks::hasPrimaryContext(c10::DeviceIndex device_index) const {
  return device_index >= 0 && device_index < deviceCountNoThrow();
}

c10::DeviceIndex NpuHooks::deviceCount() const { return core::deviceCount(); }

void NpuHooks::setCurrentDevice(c10::DeviceIndex device) const { setDevice(device); }

c10::DeviceIndex NpuHooks::getCurrentDevice() const { return currentDevice(); }

c10::DeviceIndex NpuHooks::exchangeDevice(c10::DeviceIndex device) const {
  c10::DeviceIndex old = currentDevice();
  if (device >= 0 && device != old) setDevice(device);
  return old;
}

c10::DeviceIndex NpuHooks::maybeExchangeDevice(c10::DeviceIndex device) const { return exchangeDevice(device); }

at::Device NpuHooks::getDeviceFromPtr(void* data) const {
  int d = driver::getDriver().deviceFromPtr(data);
  TORCH_CHECK(d >= 0, "pointer ", data, " is not npu device memory");
  return npuDevice(static_cast<c10::DeviceIndex>(d));
}

at::Allocator* NpuHooks::getPinnedMemoryAllocator() const { return pinnedHostAllocator(); }

bool NpuHooks::isPinnedPtr(const void* data) const { return isPinnedHostPtr(data); }

const at::Generator& NpuHooks::getDefaultGenerator(c10::DeviceIndex device_index) const {
  return defaultNpuGenerator(device_index);
}

at::Generator NpuHooks::getNewGenerator(c10::DeviceIndex device_index) const { return newNpuGenerator(device_index); }

void NpuHooks::resizePrivateUse1Bytes(const c10::Storage& storage, size_t newsize) const {
  resizeStorageBytes(storage, newsize);
}

}  // namespace npudist::core
