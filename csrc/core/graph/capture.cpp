#include "core/graph/capture.h"

#include <c10/util/Exception.h>

#include <algorithm>

#include "core/allocator/caching_allocator.h"
#include "core/aten/cpu_alias.h"
#include "core/stream.h"

namespace npudist::core::graph {

std::atomic<int> g_capture_count{0};

namespace {

struct EventMark {
  Capture* capture;
  c10::StreamId stream;
  size_t seq;  // nodes recorded on `stream` when the event was recorded
};

struct Registry {
  std::mutex mutex;
  std::vector<Capture*> captures;
  std::map<std::pair<c10::DeviceIndex, c10::StreamId>, Capture*> streams;
  std::unordered_map<void*, EventMark> events;
  std::atomic<int> marked{0};  // events.size(), readable without the lock
};

Registry& reg() {
  static auto* r = new Registry();  // never destroyed
  return *r;
}

std::string streamName(c10::DeviceIndex d, c10::StreamId s) { return c10::str("npu:", int(d), " stream ", s); }

}  // namespace

const char* modeName(at::GraphCaptureMode mode) {
  switch (mode) {
    case at::GraphCaptureMode::ThreadLocal:
      return "thread_local";
    case at::GraphCaptureMode::Relaxed:
      return "relaxed";
    default:
      return "global";
  }
}

void Capture::append(Node node) {
  ++nodes_on[node.stream];
  auto side = sides.find(node.stream);
  if (side != sides.end()) side->second.rejoined = false;
  nodes.push_back(std::move(node));
}

void Capture::checkValid(const char* op) {
  if (!invalid.empty())
    TORCH_CHECK(false, op, " was issued on a stream whose npu graph capture was already invalidated (", invalid,
                "). End the capture (capture_end raises), fix the cause and capture again.");
}

namespace {
void noDelete(void*) {}
}  // namespace

// Memory from the graph's own pool is referenced by address only, as a CUDA
// graph does: a temporary that dies during capture returns its block to the
// pool, where later captured work reuses it (replay order makes that safe),
// and the pool keeps the memory until reset(). Any other memory (parameters,
// static inputs) is kept alive by the graph, so replay never writes memory
// the allocator handed to someone else.
at::Tensor Capture::cpuAlias(const at::Tensor& npu) {
  const c10::Storage& st = npu.storage();
  auto key = std::make_pair(st.data(), st.nbytes());
  auto it = cpu_storages.find(key);
  if (it == cpu_storages.end()) {
    c10::Storage alias;
    if (st.data() && npuAllocator().inPool(st.data(), pool)) {
      c10::DataPtr dp(const_cast<void*>(st.data()), nullptr, &noDelete, c10::Device(c10::DeviceType::CPU));
      alias = c10::Storage(c10::make_intrusive<c10::StorageImpl>(c10::StorageImpl::use_byte_size_t(), st.nbytes(),
                                                                 std::move(dp), nullptr, /*resizable=*/false));
    } else {
      alias = aliasStorageAsCpu(st);
    }
    it = cpu_storages.emplace(key, std::move(alias)).first;
  }
  return cpuTensorOver(it->second, npu);
}

void registerCapture(Capture* c) {
  Registry& r = reg();
  std::lock_guard<std::mutex> g(r.mutex);
  r.captures.push_back(c);
  r.streams[{c->device, c->origin}] = c;
  g_capture_count.fetch_add(1, std::memory_order_relaxed);
}

std::vector<c10::StreamId> unregisterCapture(Capture* c) {
  Registry& r = reg();
  std::vector<c10::StreamId> sides;
  std::lock_guard<std::mutex> g(r.mutex);
  auto it = std::find(r.captures.begin(), r.captures.end(), c);
  if (it == r.captures.end()) return sides;
  r.captures.erase(it);
  for (auto s = r.streams.begin(); s != r.streams.end();) {
    if (s->second == c) {
      if (s->first.second != c->origin) sides.push_back(s->first.second);
      s = r.streams.erase(s);
    } else {
      ++s;
    }
  }
  for (auto e = r.events.begin(); e != r.events.end();) {
    if (e->second.capture == c)
      e = r.events.erase(e);
    else
      ++e;
  }
  r.marked.store(int(r.events.size()), std::memory_order_relaxed);
  g_capture_count.fetch_sub(1, std::memory_order_relaxed);
  return sides;
}

Capture* captureOf(c10::DeviceIndex device, c10::StreamId stream) {
  if (!anyCapture()) return nullptr;
  Registry& r = reg();
  std::lock_guard<std::mutex> g(r.mutex);
  auto it = r.streams.find({device, stream});
  return it == r.streams.end() ? nullptr : it->second;
}

Capture* captureOfCurrent(c10::DeviceIndex device) {
  if (!anyCapture()) return nullptr;
  return captureOf(device, currentStreamId(device));
}

bool isStreamCapturing(const c10::Stream& stream) {
  return stream.device_type() == c10::DeviceType::PrivateUse1 && captureOf(stream.device_index(), stream.id());
}

void checkUnsafeCall(const char* what) {
  if (!anyCapture()) return;
  Registry& r = reg();
  std::vector<Capture*> hit;
  {
    std::lock_guard<std::mutex> g(r.mutex);
    const auto self = std::this_thread::get_id();
    for (Capture* c : r.captures) {
      bool own = c->thread == self;
      if ((own && c->mode != at::GraphCaptureMode::Relaxed) || (!own && c->mode == at::GraphCaptureMode::Global))
        hit.push_back(c);
    }
  }
  if (hit.empty()) return;
  std::string where;
  for (Capture* c : hit) {
    std::lock_guard<std::mutex> g(c->mutex);
    if (c->invalid.empty()) c->invalid = c10::str(what, " during capture");
    if (!where.empty()) where += ", ";
    where += c10::str(streamName(c->device, c->origin), " (capture_error_mode='", modeName(c->mode), "')");
  }
  TORCH_CHECK(false, what, " is not allowed while an npu graph is being captured on ", where,
              "; the capture has been invalidated. Move the call out of the capture; if it comes from another "
              "thread and does not touch the captured work, capture with capture_error_mode='thread_local' "
              "(or 'relaxed').");
}

void failOnCapturingStream(Capture* c, const std::string& what) {
  {
    std::lock_guard<std::mutex> g(c->mutex);
    if (c->invalid.empty()) c->invalid = what;
  }
  TORCH_CHECK(false, what, ": not possible on a stream that is capturing an npu graph (",
              streamName(c->device, c->origin),
              "): captured work has not run yet. The capture has been "
              "invalidated; do this outside the capture (before capture_begin or after capture_end).");
}

void onEventRecord(void* event, const c10::Stream& stream) {
  Registry& r = reg();
  if (!anyCapture() && r.marked.load(std::memory_order_relaxed) == 0) return;
  std::lock_guard<std::mutex> g(r.mutex);
  auto it = r.streams.find({stream.device_index(), stream.id()});
  if (it == r.streams.end()) {
    r.events.erase(event);
  } else {
    Capture* c = it->second;
    std::lock_guard<std::mutex> cg(c->mutex);
    r.events[event] = EventMark{c, stream.id(), c->nodes_on[stream.id()]};
  }
  r.marked.store(int(r.events.size()), std::memory_order_relaxed);
}

void onEventBlock(void* event, const c10::Stream& stream) {
  Registry& r = reg();
  if (r.marked.load(std::memory_order_relaxed) == 0) return;
  Capture* fork_into = nullptr;
  c10::MempoolId_t pool{0, 0};
  {
    std::lock_guard<std::mutex> g(r.mutex);
    auto ev = r.events.find(event);
    if (ev == r.events.end()) return;
    EventMark mark = ev->second;
    Capture* c = mark.capture;
    auto key = std::make_pair(stream.device_index(), stream.id());
    auto s = r.streams.find(key);
    if (s == r.streams.end()) {
      // A stream waits on captured work: it joins the capture (a fork).
      TORCH_CHECK(stream.device_index() == c->device, "an npu stream on device ", int(stream.device_index()),
                  " waited on work captured on device ", int(c->device), "; a graph captures one device");
      r.streams[key] = c;
      std::lock_guard<std::mutex> cg(c->mutex);
      c->sides[stream.id()] = Capture::Side{};
      fork_into = c;
      pool = c->pool;
    } else {
      TORCH_CHECK(s->second == c,
                  "an npu stream capturing one graph waited on an event recorded in another "
                  "graph's capture; graphs cannot depend on each other's captured work");
      std::lock_guard<std::mutex> cg(c->mutex);
      auto side = c->sides.find(mark.stream);
      if (side != c->sides.end() && mark.seq == c->nodes_on[mark.stream] && stream.id() != mark.stream)
        side->second.rejoined = true;  // everything the side stream captured is joined back
    }
  }
  // Outside the registry lock: the allocator calls checkUnsafeCall under its own.
  if (fork_into) npuAllocator().beginAllocateToPool(stream.device_index(), stream.id(), pool);
}

void onEventDestroy(void* event) {
  Registry& r = reg();
  if (r.marked.load(std::memory_order_relaxed) == 0) return;
  std::lock_guard<std::mutex> g(r.mutex);
  r.events.erase(event);
  r.marked.store(int(r.events.size()), std::memory_order_relaxed);
}

}  // namespace npudist::core::graph
