#include "core/graph/npu_graph.h"

#include <ATen/core/LegacyTypeDispatch.h>
#include <c10/core/DeviceGuard.h>
#include <c10/util/Exception.h>

#include <atomic>
#include <cstring>
#include <fstream>

#include "core/allocator/caching_allocator.h"
#include "core/device.h"
#include "core/generator.h"
#include "core/graph/kernel_call.h"
#include "core/stream.h"
#include "profiler/device_hooks.h"

namespace npudist::core::graph {
namespace {

std::atomic<uint64_t> g_next_pool{1};

void copyInto(const c10::IValue& dst, const c10::IValue& src) {
  if (dst.isTensor()) {
    dst.toTensor().copy_(src.toTensor());
  } else if (dst.isTensorList()) {
    auto d = dst.toTensorList();
    auto s = src.toTensorList();
    for (size_t i = 0; i < d.size(); ++i) d.get(i).copy_(s.get(i));
  }
}

}  // namespace

c10::MempoolId_t graphPoolHandle() { return {0, g_next_pool.fetch_add(1)}; }

NpuGraph::NpuGraph(const at::GraphImplArgs& args) : keep_graph_(args.keep_graph) {}

NpuGraph::~NpuGraph() {
  try {
    reset();
  } catch (...) {
    // A destructor must not throw; the pool stays accounted as in use.
  }
}

void NpuGraph::capture_begin(c10::MempoolId_t pool, at::GraphCaptureMode mode) {
  TORCH_CHECK(!captured_ && !capture_,
              "this npu graph already holds a capture (or is capturing); call reset() before capturing again, "
              "or use a new graph");
  c10::DeviceIndex device = currentDevice();
  c10::Stream stream = currentStream(device);
  TORCH_CHECK(stream.id() != 0,
              "npu graph capture on the default stream is not allowed (as for CUDA graphs): capture on a side "
              "stream, e.g. `with torch.npu.graph(g):` (it uses one) or `with torch.npu.stream(torch.npu.Stream()):`");
  TORCH_CHECK(!captureOf(device, stream.id()), "npu:", int(device), " stream ", stream.id(),
              " is already capturing a graph; end that capture first");
  TORCH_CHECK(pool.first == 0 || pool.second == 0,
              "capture_begin: pool must come from torch.npu.graph_pool_handle() or another graph's pool(), got (",
              pool.first, ", ", pool.second, ")");
  // Pending deferred work on the stream (collectives) belongs before the capture.
  waitCurrentStream(device);
  if (pool.first == 0 && pool.second == 0) pool = {g_next_pool.fetch_add(1), 0};  // private
  auto c = std::make_unique<Capture>();
  c->device = device;
  c->origin = stream.id();
  c->mode = mode == at::GraphCaptureMode::Default ? at::GraphCaptureMode::Global : mode;
  c->thread = std::this_thread::get_id();
  c->pool = pool;
  c->debug = debug_;
  npuAllocator().beginAllocateToPool(device, stream.id(), pool);
  device_ = device;
  pool_ = pool;
  registerCapture(c.get());
  capture_ = std::move(c);
}

void NpuGraph::discardCapture() {
  if (!capture_) return;
  Capture* c = capture_.get();
  std::vector<c10::StreamId> sides = unregisterCapture(c);
  npuAllocator().endAllocateToPool(c->device, c->origin, c->pool);
  for (c10::StreamId s : sides) npuAllocator().endAllocateToPool(c->device, s, c->pool);
  capture_.reset();
}

void NpuGraph::capture_end() {
  TORCH_CHECK(capture_, "capture_end() called without capture_begin()");
  Capture* c = capture_.get();
  TORCH_CHECK(currentStreamId(c->device) == c->origin,
              "capture_end() must be called with the capturing stream (npu:", int(c->device), " stream ", c->origin,
              ") current; the current stream is ", currentStreamId(c->device));
  std::string error;
  {
    std::lock_guard<std::mutex> g(c->mutex);
    if (!c->invalid.empty()) {
      error = c10::str("npu graph capture failed and was discarded: ", c->invalid, ".");
    } else {
      std::string unjoined;
      for (const auto& kv : c->sides) {
        if (kv.second.rejoined || c->nodes_on[kv.first] == 0) continue;
        if (!unjoined.empty()) unjoined += ", ";
        unjoined += std::to_string(kv.first);
      }
      if (!unjoined.empty())
        error = c10::str("npu graph capture failed and was discarded: stream(s) ", unjoined, " of npu:", int(c->device),
                         " forked from the capturing stream and captured work that was not joined "
                         "back before capture_end() (make the capturing stream wait on them: "
                         "capturing_stream.wait_stream(side_stream)).");
    }
  }
  if (!error.empty()) {
    discardCapture();
    TORCH_CHECK(false, error);
  }
  npuAllocator().retainPool(c->device, c->pool);  // the graph's outputs live there until reset()
  holds_pool_ = true;
  std::vector<c10::StreamId> sides = unregisterCapture(c);
  npuAllocator().endAllocateToPool(c->device, c->origin, c->pool);
  for (c10::StreamId s : sides) npuAllocator().endAllocateToPool(c->device, s, c->pool);
  {
    std::lock_guard<std::mutex> g(c->mutex);
    nodes_ = std::move(c->nodes);
    gens_ = std::move(c->gens);
    for (auto& kv : c->cpu_storages) keep_.push_back(std::move(kv.second));
  }
  for (Node& n : nodes_) {
    max_args_ = std::max(max_args_, n.args.size());
    // Shapes and addresses of written tensor arguments, checked at the first replay.
    if (n.kind != Node::Kind::kOp) continue;
    const auto& args = n.op->schema().arguments();
    n.shapes.resize(n.args.size());
    n.ptrs.resize(n.args.size());
    for (size_t i = 0; i < n.args.size() && i < args.size(); ++i) {
      if (!n.args[i].isTensor() || !args[i].alias_info() || !args[i].alias_info()->isWrite()) continue;
      const at::Tensor& t = n.args[i].toTensor();
      n.shapes[i] = t.sizes().vec();
      n.ptrs[i] = t.data_ptr();
    }
  }
  capture_.reset();
  captured_ = true;
  if (nodes_.empty())
    TORCH_WARN("The npu graph is empty: no npu work was issued on the capturing stream (npu:", int(device_),
               ") between capture_begin and capture_end; replay will do nothing. Was the work issued on "
               "another stream or device?");
  if (!keep_graph_) instantiate();
}

void NpuGraph::instantiate() {
  TORCH_CHECK(captured_,
              "instantiate(): this npu graph has no completed capture (call capture_begin/capture_end first)");
  // The nodes are already executable: arguments are bound to fixed addresses
  // and out= overloads were resolved at capture.
  instantiated_ = true;
}

void NpuGraph::replay() {
  TORCH_CHECK(captured_, "replay(): this npu graph has no completed capture (capture it first, or it was reset)");
  if (!instantiated_) instantiate();
  c10::DeviceGuard guard(npuDevice(device_));
  if (Capture* c = captureOfCurrent(device_))
    failOnCapturingStream(c, "replaying an npu graph (graphs cannot be captured into graphs)");
  // Whatever the stream was made to wait for (collectives) completes first.
  waitCurrentStream(device_);
  profiler::DeviceScope timed(profiler::EventKind::kGraphReplay, device_);
  if (C10_UNLIKELY(timed.on())) profiler::describeGraphReplay(timed, nodes_.size());

  // Each replay takes a fresh share of every generator it draws from, as
  // CUDA graphs read the Philox seed and offset at replay time: two replays
  // differ, and manual_seed makes the sequence repeat.
  c10::SmallVector<std::pair<uint64_t, uint64_t>, 2> base;
  for (GeneratorSlot& s : gens_) {
    std::lock_guard<std::mutex> lock(s.gen.mutex());
    auto* impl = s.gen.get<NpuGeneratorImpl>();
    base.emplace_back(impl->current_seed(), impl->get_offset());
    impl->set_offset(impl->get_offset() + s.consumed);
  }

  at::AutoDispatchBelowADInplaceOrView below_autograd;
  const c10::DispatchKeySet cpu(c10::DispatchKey::CPU);
  torch::jit::Stack stack;
  stack.reserve(max_args_ + 4);
  for (const Node& n : nodes_) {
    switch (n.kind) {
      case Node::Kind::kOp:
      case Node::Kind::kOpCopyBack: {
        stack.assign(n.args.begin(), n.args.end());
        if (n.gen_slot >= 0) {
          const auto& b = base[size_t(n.gen_slot)];
          stack[n.gen_arg] = NpuGeneratorImpl::engineAt(b.first, b.second + n.rng_offset);
        }
        n.op->redispatchBoxed(cpu, &stack);
        if (C10_UNLIKELY(!verified_) && n.kind == Node::Kind::kOp) verifyOutputs(n);
        if (n.kind == Node::Kind::kOpCopyBack)
          for (size_t i = 0; i < n.copy_dst.size() && i < stack.size(); ++i) copyInto(n.copy_dst[i], stack[i]);
        stack.clear();
        break;
      }
      case Node::Kind::kCopy:
        if (n.src.dtype() == n.dst.dtype() && n.src.sizes() == n.dst.sizes() && n.src.is_contiguous() &&
            n.dst.is_contiguous() && !n.src.is_conj() && !n.src.is_neg())
          std::memmove(n.dst.data_ptr(), n.src.data_ptr(), n.src.nbytes());
        else
          n.dst.copy_(n.src);
        break;
      case Node::Kind::kHost:
        n.host();
        waitCurrentStream(device_);
        break;
      case Node::Kind::kCall:
        callKernel(n.fn, n.iargs.data(), n.iargs.size());
        break;
    }
  }
  verified_ = true;
}

// First replay: an out= kernel that resized its output disagrees with the
// shape the meta kernel gave at capture; the output no longer aliases the
// captured tensor, so results would be silently lost. Refuse instead.
void NpuGraph::verifyOutputs(const Node& n) {
  for (size_t i = 0; i < n.args.size(); ++i) {
    const c10::IValue& v = n.args[i];
    if (!v.isTensor() || i >= n.shapes.size() || !n.shapes[i]) continue;
    const at::Tensor& t = v.toTensor();
    if (t.sizes() != *n.shapes[i] || t.data_ptr() != n.ptrs[i])
      TORCH_CHECK(false, "npu graph replay: ", n.name, " wrote an output of shape ", t.sizes(),
                  " where capture "
                  "expected ",
                  *n.shapes[i],
                  "; this op cannot be replayed from a graph (please report it). "
                  "Capture it outside the graph.");
  }
}

void NpuGraph::reset() {
  discardCapture();
  nodes_.clear();
  gens_.clear();
  keep_.clear();
  if (holds_pool_) {
    npuAllocator().releasePool(device_, pool_);
    holds_pool_ = false;
  }
  captured_ = instantiated_ = verified_ = false;
  max_args_ = 0;
}

c10::MempoolId_t NpuGraph::pool() const {
  TORCH_CHECK(captured_ || capture_, "pool(): this npu graph has not been captured yet");
  return pool_;
}

void NpuGraph::enable_debug_mode() { debug_ = true; }

void NpuGraph::debug_dump(const std::string& path) {
  TORCH_CHECK(debug_, "debug_dump(): call enable_debug_mode() before capturing to keep the graph's description");
  TORCH_CHECK(captured_, "debug_dump(): this npu graph has no completed capture");
  std::ofstream f(path);
  TORCH_CHECK(f, "debug_dump(): cannot write ", path);
  // Graphviz: one node per recorded kernel, edges in replay order per stream.
  f << "digraph npu_graph {\n  label=\"npu graph: " << nodes_.size() << " nodes, pool (" << pool_.first << ", "
    << pool_.second << ")\";\n";
  std::map<c10::StreamId, size_t> last;
  for (size_t i = 0; i < nodes_.size(); ++i) {
    const Node& n = nodes_[i];
    const char* kind = n.kind == Node::Kind::kCopy   ? "copy"
                       : n.kind == Node::Kind::kHost ? "host"
                       : n.kind == Node::Kind::kCall ? "compiled kernel"
                                                     : "kernel";
    f << "  n" << i << " [label=\"" << i << ": " << n.name << "\\n" << kind << " stream " << n.stream;
    if (!n.detail.empty()) f << "\\n" << n.detail;
    if (n.gen_slot >= 0) f << "\\nrng +" << n.rng_offset;
    f << "\"];\n";
    auto it = last.find(n.stream);
    if (it != last.end())
      f << "  n" << it->second << " -> n" << i << ";\n";
    else if (i > 0)
      f << "  n" << (i - 1) << " -> n" << i << " [style=dashed];\n";
    last[n.stream] = i;
  }
  f << "}\n";
}

}  // namespace npudist::core::graph
