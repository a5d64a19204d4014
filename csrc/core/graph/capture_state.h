// What the rest of the device core asks about graph capture: is a stream
// capturing, may this call run now. Light on purpose (the allocator and the
// kernels include it); the capture itself is in capture.h / npu_graph.h.
#pragma once

#include <c10/core/Stream.h>

#include <atomic>
#include <string>

namespace npudist::core::graph {

// Number of captures underway in the process (the hot path checks it first).
extern std::atomic<int> g_capture_count;
inline bool anyCapture() { return g_capture_count.load(std::memory_order_relaxed) > 0; }

struct Capture;

// The capture `stream` records into, or nullptr.
Capture* captureOf(c10::DeviceIndex device, c10::StreamId stream);
// The capture of the calling thread's current stream on `device`, or nullptr.
Capture* captureOfCurrent(c10::DeviceIndex device);
bool isStreamCapturing(const c10::Stream& stream);

// A potentially unsafe call (synchronize, a host read, a copy to cpu,
// empty_cache, new device memory outside a graph pool): raises, and
// invalidates the captures concerned, when a capture's error mode prohibits
// it on this thread ("global": any thread; "thread_local": the capturing
// thread; "relaxed": never). Nothing when no capture is underway.
void checkUnsafeCall(const char* what);

// `what` cannot run on a capturing stream (it needs the stream's results
// now): invalidates the capture and raises.
[[noreturn]] void failOnCapturingStream(Capture* capture, const std::string& what);

// Fork/join of side streams through events (the guard calls these).
void onEventRecord(void* event, const c10::Stream& stream);
void onEventBlock(void* event, const c10::Stream& stream);
void onEventDestroy(void* event);

}  // namespace npudist::core::graph
