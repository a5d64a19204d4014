// npu streams as c10::Streams: a per-device table of driver streams indexed
// by c10::StreamId (0 = default stream, then the pool, then new streams) and
// the calling thread's current stream per device.
#pragma once

#include <c10/core/Stream.h>

#include <functional>

#include <memory>

#include "driver/driver.h"

namespace npudist::driver {
struct Task;
}

namespace npudist::core {

constexpr int kStreamPoolSize = 8;

driver::Stream driverStream(const c10::Stream& stream);
c10::Stream defaultStream(c10::DeviceIndex device);
c10::Stream currentStream(c10::DeviceIndex device);
// The id of the calling thread's current stream on a device already checked
// by the caller (hot path: no validation, no stream creation).
c10::StreamId currentStreamId(c10::DeviceIndex device);
// Makes `stream` current on its device; returns the previous current stream.
c10::Stream exchangeStream(const c10::Stream& stream);
c10::Stream streamFromPool(c10::DeviceIndex device);
c10::Stream newStream(c10::DeviceIndex device, int priority);

// The hot-path check before a kernel runs on `device`: completes whatever the
// current stream has been made to wait for (one atomic load when nothing).
void waitCurrentStream(c10::DeviceIndex device);

// Whether waitCurrentStream(device) would block: callers holding the GIL release
// it first when true (a Python host function on that stream needs the GIL).
bool currentStreamHasPending(c10::DeviceIndex device);

// Queues deferred work on `stream`; it runs with `stream` current on its device.
void launchDeferred(const c10::Stream& stream, std::function<void()> fn);

// The same, returning the driver task (device core only; code above the core
// uses core::launchDeferredTask in core/deferred.h). With
// tolerate_failed_deps, the task runs even if earlier work on the stream
// failed. `after` (optional) runs, as deferred work too, right after the task is done.
std::shared_ptr<driver::Task> launchDriverTask(const c10::Stream& stream, std::function<void()> fn,
                                               bool tolerate_failed_deps, std::function<void()> after = {});

// True while deferred work is running on this thread (its kernels do not wait).
bool inDeferredWork();

// Thread lifecycle of the streams' workers (docs/lifecycle.md).
// With `drain`, completes what `stream` was made to wait for; then stops its
// worker and joins it if it finishes within `timeout_ms` (else it returns on
// its own once idle and is joined by the next stop). A later task starts a
// new worker. Used when a process group is shut down or destroyed.
bool stopStreamWorker(const c10::Stream& stream, int64_t timeout_ms, bool drain);
// Process shutdown (interpreter exit): completes the work queued on every
// stream of every device and joins every worker; afterwards no worker starts
// again and deferred work runs on the thread that queues it. Call without
// the GIL (a finishing task's callback may need it). Returns the number of
// workers joined.
int shutdownStreamWorkers();

}  // namespace npudist::core
