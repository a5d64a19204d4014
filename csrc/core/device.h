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

}  // namespace npudist::core
