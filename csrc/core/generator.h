// The npu random generator: one default per device, Philox-shaped state.
//
// Its state is what CUDA's generator exposes and DTensor's RNG tracker reads:
// 16 bytes, a uint64 seed followed by an int64 offset. Random ops on npu draw
// from it through engineFor(): the CPU kernels run with a CPU engine keyed by
// (seed, offset), and the offset advances by the values consumed (rounded up
// to 4, as Philox counters do). So the same (seed, offset) gives the same
// numbers, every device has its own stream, and setting the offset (as
// DTensor does per shard) selects a different, reproducible stream. The bits
// come from the CPU engine (mt19937), not from the Philox function itself.
#pragma once

#include <ATen/core/Generator.h>
#include <c10/core/GeneratorImpl.h>

namespace npudist::core {

struct NpuGeneratorImpl final : public c10::GeneratorImpl {
  explicit NpuGeneratorImpl(c10::DeviceIndex device, uint64_t seed = c10::default_rng_seed_val);

  void set_current_seed(uint64_t seed) override;
  void set_offset(uint64_t offset) override;
  uint64_t get_offset() const override;
  uint64_t current_seed() const override;
  uint64_t seed() override;
  // 16 bytes (CPU uint8 tensor): seed as uint64, then offset as int64.
  void set_state(const c10::TensorImpl& new_state) override;
  c10::intrusive_ptr<c10::TensorImpl> get_state() const override;

  static c10::DeviceType device_type() { return c10::DeviceType::PrivateUse1; }

  // A CPU generator for the current (seed, offset). The caller holds mutex_.
  at::Generator engine() const;
  // The CPU engine for any (seed, offset): what engine() returns at that
  // state (graph replay draws from it at the offsets the graph reserved).
  static at::Generator engineAt(uint64_t seed, uint64_t offset);
  // Advances the offset past `values` random values (rounded up to 4).
  void advance(uint64_t values);

 private:
  NpuGeneratorImpl* clone_impl() const override;
  uint64_t seed_;
  uint64_t offset_ = 0;
};

// The default generator of `device` (-1: current), created on first use.
const at::Generator& defaultNpuGenerator(c10::DeviceIndex device);
at::Generator newNpuGenerator(c10::DeviceIndex device);

}  // namespace npudist::core
