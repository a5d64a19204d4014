#include "core/generator.h"

#include <ATen/CPUGeneratorImpl.h>
#include <ATen/core/Tensor.h>
#include <ATen/ops/empty.h>
#include <c10/util/irange.h>

#include <array>
#include <cstring>
#include <mutex>

#include "core/device.h"

namespace npudist::core {
namespace {

constexpr size_t kStateSize = 16;

// SplitMix64: a strong 64-bit mix, so nearby (seed, offset) pairs give
// unrelated engine seeds.
uint64_t mix(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

}  // namespace

NpuGeneratorImpl::NpuGeneratorImpl(c10::DeviceIndex device, uint64_t seed)
    : c10::GeneratorImpl(npuDevice(device), c10::DispatchKeySet(c10::DispatchKey::PrivateUse1)), seed_(seed) {}

void NpuGeneratorImpl::set_current_seed(uint64_t seed) {
  seed_ = seed;
  offset_ = 0;
}
void NpuGeneratorImpl::set_offset(uint64_t offset) { offset_ = offset; }
uint64_t NpuGeneratorImpl::get_offset() const { return offset_; }
uint64_t NpuGeneratorImpl::current_seed() const { return seed_; }

uint64_t NpuGeneratorImpl::seed() {
  uint64_t s = c10::detail::getNonDeterministicRandom();
  set_current_seed(s);
  return s;
}

void NpuGeneratorImpl::set_state(const c10::TensorImpl& new_state) {
  TORCH_CHECK(new_state.dtype() == caffe2::TypeMeta::Make<uint8_t>() && new_state.numel() == kStateSize,
              "npu RNG state must be a torch.uint8 tensor of ", kStateSize, " bytes (seed, offset), got ",
              new_state.numel(), " elements of ", new_state.dtype().name());
  TORCH_CHECK(new_state.device().is_cpu() && new_state.is_contiguous(),
              "npu RNG state must be a contiguous cpu tensor");
  uint64_t seed;
  int64_t offset;
  const auto* bytes = static_cast<const uint8_t*>(new_state.data());
  std::memcpy(&seed, bytes, 8);
  std::memcpy(&offset, bytes + 8, 8);
  TORCH_CHECK(offset >= 0, "npu RNG state: the offset must be non-negative, got ", offset);
  seed_ = seed;
  offset_ = uint64_t(offset);
}

c10::intrusive_ptr<c10::TensorImpl> NpuGeneratorImpl::get_state() const {
  at::Tensor state = at::empty({int64_t(kStateSize)}, at::TensorOptions().dtype(at::kByte).device(at::kCPU));
  auto* bytes = state.data_ptr<uint8_t>();
  int64_t offset = int64_t(offset_);
  std::memcpy(bytes, &seed_, 8);
  std::memcpy(bytes + 8, &offset, 8);
  return state.getIntrusivePtr();
}

at::Generator NpuGeneratorImpl::engine() const { return engineAt(seed_, offset_); }

at::Generator NpuGeneratorImpl::engineAt(uint64_t seed, uint64_t offset) {
  return at::detail::createCPUGenerator(mix(seed) ^ mix(~offset));
}

void NpuGeneratorImpl::advance(uint64_t values) { offset_ += (values + 3) / 4 * 4; }

NpuGeneratorImpl* NpuGeneratorImpl::clone_impl() const {
  auto* g = new NpuGeneratorImpl(device().index(), seed_);
  g->offset_ = offset_;
  return g;
}

const at::Generator& defaultNpuGenerator(c10::DeviceIndex device) {
  static std::array<std::once_flag, kMaxDevices> once;
  static std::array<at::Generator, kMaxDevices> gens;
  c10::DeviceIndex d = device < 0 ? currentDevice() : device;
  checkDeviceIndex(d);
  std::call_once(once[size_t(d)], [d] {
    gens[size_t(d)] = at::make_generator<NpuGeneratorImpl>(d);
    gens[size_t(d)].set_current_seed(c10::default_rng_seed_val);
  });
  return gens[size_t(d)];
}

at::Generator newNpuGenerator(c10::DeviceIndex device) {
  c10::DeviceIndex d = device < 0 ? currentDevice() : device;
  checkDeviceIndex(d);
  return at::make_generator<NpuGeneratorImpl>(d);
}

}  // namespace npudist::core
