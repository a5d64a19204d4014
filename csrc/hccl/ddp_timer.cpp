// DDP's reducer timer for npu: c10d's TimerRegistry takes one entry per device type, and the
// reducer creates the timer of its parameters' device. Without one, DDP on npu logs "Time stats
// are currently only collected for CPU and CUDA devices" and its logging data (the
// *_compute_time / *_comm_time entries of DDP's _get_ddp_logging_data) has no timings.
//
// As the reducer's CUDA timer does: each event is an npu event recorded on the current stream,
// so a time that ends in communication counts until the collectives queued on the stream
// have run (they complete asynchronously on the communicator's stream), and the host
// timestamps the base class keeps (for the forward start) come along too.
#include <c10/core/Event.h>
#include <c10/core/impl/DeviceGuardImplInterface.h>
#include <torch/csrc/distributed/c10d/reducer_timer.hpp>

namespace npudist::hccl {
namespace {

class NpuTimer final : public c10d::Timer {
 public:
  explicit NpuTimer(c10::Device device) : device_(device) {}

  void record(Event event) override {
    // The host time too: DDP reads the forward start from it (Timer::getTimestamp).
    Timer::record(event);
    const auto* impl = c10::impl::getDeviceGuardImpl(c10::DeviceType::PrivateUse1);
    c10::Stream stream = impl->getStream(device_);
    eventFor(event).record(stream);
  }

  std::optional<int64_t> measureDifference(Event start, Event end) override {
    c10::Event& a = eventFor(start);
    c10::Event& b = eventFor(end);
    // An event never recorded in this iteration (e.g. no communication happened) has no time.
    if (!a.was_marked_for_recording() || !b.was_marked_for_recording()) return std::nullopt;
    a.synchronize();
    b.synchronize();
    double ms = a.elapsedTime(b);
    if (ms < 0) return std::nullopt;  // out of order (as the CUDA timer treats it)
    return static_cast<int64_t>(ms * 1000.0 * 1000.0);
  }

 private:
  c10::Event& eventFor(Event event) {
    switch (event) {
      case Event::kForwardStart:
        return forward_start_;
      case Event::kBackwardComputeStart:
        return backward_compute_start_;
      case Event::kBackwardComputeEnd:
        return backward_compute_end_;
      case Event::kBackwardCommStart:
        return backward_comm_start_;
      case Event::kBackwardCommEnd:
        return backward_comm_end_;
    }
    TORCH_INTERNAL_ASSERT(false, "unknown DDP timer event");
  }

  static c10::Event timingEvent() {
    // BACKEND_DEFAULT: an event that records time (torch.Event(enable_timing=True) asks the same).
    return c10::Event(c10::DeviceType::PrivateUse1, c10::EventFlag::BACKEND_DEFAULT);
  }

  c10::Device device_;
  c10::Event forward_start_ = timingEvent();
  c10::Event backward_compute_start_ = timingEvent();
  c10::Event backward_compute_end_ = timingEvent();
  c10::Event backward_comm_start_ = timingEvent();
  c10::Event backward_comm_end_ = timingEvent();
};

}  // namespace
}  // namespace npudist::hccl

namespace c10d {
// The registration torch_npu makes too (C10_REGISTER_TYPED_CLASS with kPrivateUse1).
C10_REGISTER_TYPED_CLASS(TimerRegistry, c10::kPrivateUse1, npudist::hccl::NpuTimer)
}  // namespace c10d
