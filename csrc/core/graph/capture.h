// A capture in progress and the nodes it records (internal to csrc/core).
//
// A node is one unit of work replay runs: a CPU kernel over CPU aliases of
// the npu memory the captured op used (npu memory is host memory, so the
// aliases are the device addresses the graph bakes in, as a CUDA graph
// bakes in pointers), an npu-to-npu copy, deferred host work (a
// collective) re-issued through the device core, or a direct call of a
// compiled C kernel (torch.compile's generated kernels, kernel_call.h).
#pragma once

#include <ATen/core/GraphImplInterface.h>
#include <ATen/core/Tensor.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/core/Generator.h>

#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "core/graph/capture_state.h"

namespace npudist::core::graph {

struct Node {
  enum class Kind { kOp, kOpCopyBack, kCopy, kHost, kCall };
  Kind kind = Kind::kOp;
  std::optional<c10::OperatorHandle> op;  // kOp / kOpCopyBack
  std::vector<c10::IValue> args;          // the boxed arguments, npu tensors as CPU aliases
  // Random ops: the generator slot of the graph and where its engine goes.
  int gen_slot = -1;
  size_t gen_arg = 0;
  uint64_t rng_offset = 0;  // offset inside the graph's share of the generator
  // kOpCopyBack (an op without an out= variant): returns are copied into these.
  std::vector<c10::IValue> copy_dst;
  at::Tensor src, dst;         // kCopy (CPU aliases)
  std::function<void()> host;  // kHost
  // kCall: a C function taking only integer-class arguments (addresses, int64).
  void* fn = nullptr;
  std::vector<intptr_t> iargs;
  std::vector<c10::Storage> keep;  // cpu storages a kCall reads (npu ones are kept by the capture)
  c10::StreamId stream = 0;
  std::string name;    // operator or work name (errors, debug_dump)
  std::string detail;  // shapes, in debug mode only
  // Written tensor arguments' shapes and addresses (checked at the first replay).
  std::vector<std::optional<std::vector<int64_t>>> shapes;
  std::vector<const void*> ptrs;
};

struct GeneratorSlot {
  at::Generator gen;
  uint64_t consumed = 0;  // offset the whole graph consumes per replay
};

struct Capture {
  c10::DeviceIndex device = 0;
  c10::StreamId origin = 0;
  at::GraphCaptureMode mode = at::GraphCaptureMode::Global;
  std::thread::id thread;
  c10::MempoolId_t pool{0, 0};
  bool debug = false;

  std::mutex mutex;  // guards what follows (kernels may be issued from several threads)
  std::vector<Node> nodes;
  std::string invalid;  // why the capture was invalidated; empty while valid
  struct Side {
    bool rejoined = false;
  };
  std::map<c10::StreamId, Side> sides;       // streams forked from the capture
  std::map<c10::StreamId, size_t> nodes_on;  // nodes recorded per stream
  std::vector<GeneratorSlot> gens;
  // One CPU storage alias per npu storage, as in the eager fallback, so
  // kernels see the same overlap relations.
  // Keyed by (address, bytes): pool storages may die and their address be reused.
  std::map<std::pair<const void*, size_t>, c10::Storage> cpu_storages;

  // Appends a node recorded on `stream` (caller holds mutex).
  void append(Node node);
  // Raises if the capture was invalidated (caller holds mutex).
  void checkValid(const char* op);
  at::Tensor cpuAlias(const at::Tensor& npu);  // caller holds mutex
};

const char* modeName(at::GraphCaptureMode mode);

// Registry (capture.cpp). begin registers `capture` on its origin stream.
void registerCapture(Capture* capture);
// Removes the capture and every stream it owns; returns the side streams.
std::vector<c10::StreamId> unregisterCapture(Capture* capture);

// Recording (record.cpp). Each returns after leaving the op's results on the
// stack, as the eager kernel would.
void recordOp(Capture& c, const c10::OperatorHandle& op, torch::jit::Stack* stack, c10::StreamId stream,
              const at::Generator* gen = nullptr, size_t gen_arg = 0);
void recordCopy(Capture& c, const at::Tensor& src, const at::Tensor& dst, c10::StreamId stream);
void recordHost(Capture& c, std::string name, std::function<void()> fn, c10::StreamId stream);
// A direct call of compiled kernel `fn` with `iargs`; `tensors` are the tensor
// arguments (their memory is kept alive as for recorded ops).
void recordKernelCall(Capture& c, std::string name, void* fn, std::vector<intptr_t> iargs,
                      const std::vector<at::Tensor>& tensors, c10::StreamId stream);

}  // namespace npudist::core::graph
