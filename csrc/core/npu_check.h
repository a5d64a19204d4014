// Turns a driver Error into a Python-visible exception with the driver's
// detail message. Out-of-memory becomes torch.OutOfMemoryError.
#pragma once

#include <c10/util/Exception.h>

#include "driver/driver.h"

namespace npudist::core {

[[noreturn]] void throwDriverError(driver::Error e, const char* call);

}  // namespace npudist::core

#define NPU_CHECK(expr)                                               \
  do {                                                                \
    ::npudist::driver::Error npu_err_ = (expr);                       \
    if (C10_UNLIKELY(npu_err_ != ::npudist::driver::Error::kSuccess)) \
      ::npudist::core::throwDriverError(npu_err_, #expr);             \
  } while (0)
