// Device-level helpers over the driver: count, current device, checks.
#pragma once

#include <c10/core/Device.h>

namespace npudist::core {

constexpr int kMaxDevices = 64;

// Number of visible npus. Throws on an invalid NPUDIST_* /
// ASCEND_RT_VISIBLE_DEVICES configuration.
c10::DeviceIndex deviceCount();
// Same, for noexcept callers: 0 when the configuration is invalid.
c10::DeviceIndex deviceCountNoThrow() noexcept;
c10::DeviceIndex currentDevice();
void setDevice(c10::DeviceIndex index);
// Throws a clear error for an index outside the visible devices.
void checkDeviceIndex(c10::DeviceIndex index);
c10::Device npuDevice(c10::DeviceIndex index);

// Fork safety, as CUDA's: npu device memory is shared with a forked child
// (memfd MAP_SHARED), so a child forked after npu was initialised must not
// use npu. markInitialized() is called by the first real use.
void markInitialized();
bool isInitialized();
bool isInBadFork();
// Throws "Cannot re-initialize npu in forked subprocess ..." in a bad fork.
void checkNotInBadFork();

}  // namespace npudist::core
