// npudist._C: the one pybind11 module. Thin: each binding converts
// arguments and calls into csrc/core or csrc/driver; errors become the
// Python exceptions torch users know (ValueError, torch.OutOfMemoryError, ...).
#include <pybind11/functional.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>
#include <torch/csrc/Exceptions.h>
#include <torch/csrc/Generator.h>
#include <torch/csrc/profiler/combined_traceback.h>
#include <torch/headeronly/version.h>

#include <ATen/core/CachingHostAllocator.h>
#include <c10/core/CachingDeviceAllocator.h>

#include <chrono>

#include "core/allocator/alloc_config.h"
#include "core/allocator/caching_allocator.h"
#include "core/aten/attention_bf16.h"
#include "core/aten/cpu_kernel_routing.h"
#include "core/aten/half_gemm.h"
#include "core/device.h"
#include "core/deferred.h"
#include "core/generator.h"
#include "core/graph/capture_state.h"
#include "core/graph/npu_graph.h"
#include "core/npu_check.h"
#include "core/stream.h"
#include "driver/config.h"
#include "driver/driver.h"
#include "driver/stream_queue.h"
#include "profiler/recorder.h"

namespace py = pybind11;
using namespace npudist;

namespace npudist::bindings {
void registerHccl(py::module& m);
void registerHcclWatchdog(py::module& m);
void registerLifecycle(py::module& m);
void registerFaultInject(py::module& m);
void registerIpc(py::module& m);
void registerGraph(py::module& m);
void registerXp(py::module& m);
}  // namespace npudist::bindings

namespace {

// Wraps a lambda so C++ errors become the Python exceptions torch raises
// (c10::ValueError -> ValueError, OutOfMemoryError -> torch.OutOfMemoryError).
template <typename Sig>
struct Translated;
template <typename R, typename C, typename... A>
struct Translated<R (C::*)(A...) const> {
  template <typename F>
  static auto wrap(F fn) {
    return [fn](A... args) -> R {
      HANDLE_TH_ERRORS
      return fn(std::forward<A>(args)...);
      END_HANDLE_TH_ERRORS_PYBIND
    };
  }
};
template <typename F>
auto translated(F fn) {
  return Translated<decltype(&F::operator())>::wrap(fn);
}

// npudist._C._synchronize(device): every stream of npu `device` drained (torch.npu.synchronize).
// Fast path (no checks that could throw fail, nothing queued): returns without releasing the GIL.
PyObject* synchronizeDevice(PyObject*, PyObject* arg) {
  const long device = PyLong_Check(arg) ? PyLong_AsLong(arg) : -1;
  if (device == -1) PyErr_Clear();  // (the checked path below reports it)
  bool idle = false;
  try {
    idle = device >= 0 && core::isInitialized() && !core::isInBadFork() && device < core::deviceCount() &&
           !core::graph::anyCapture() && !driver::getDriver().devicePending(int(device));
  } catch (...) {
    idle = false;
  }
  if (idle) Py_RETURN_NONE;
  HANDLE_TH_ERRORS
  if (!PyLong_Check(arg))
    return PyErr_Format(PyExc_TypeError, "_synchronize(): device must be an int, got %s", Py_TYPE(arg)->tp_name);
  const long d = PyLong_AsLong(arg);
  if (d == -1 && PyErr_Occurred()) return nullptr;
  TORCH_CHECK(d >= INT8_MIN && d <= INT8_MAX, "npu device index ", d, " is out of range");
  core::checkDeviceIndex(c10::DeviceIndex(d));
  core::graph::checkUnsafeCall("torch.npu.synchronize()");
  pybind11::gil_scoped_release no_gil;
  NPU_CHECK(driver::getDriver().synchronizeDevice(int(d)));
  Py_RETURN_NONE;
  END_HANDLE_TH_ERRORS
}

c10::Stream streamOf(int64_t stream_id, int64_t device) {
  return c10::Stream(c10::Stream::UNSAFE, core::npuDevice(c10::DeviceIndex(device)), stream_id);
}

py::dict stat(const c10::CachingAllocator::Stat& s) {
  py::dict d;
  d["current"] = s.current;
  d["peak"] = s.peak;
  d["allocated"] = s.allocated;
  d["freed"] = s.freed;
  return d;
}

py::dict statArray(const c10::CachingAllocator::StatArray& a) {
  const char* pools[] = {"all", "small_pool", "large_pool"};
  py::dict out;
  for (size_t i = 0; i < a.size(); ++i) out[pools[i]] = stat(a[i]);
  return out;
}

}  // namespace

PYBIND11_MODULE(_C, m) {
  m.doc() = "npudist native core: the simulated npu driver and its PyTorch glue";
  m.attr("_torch_version_built") = TORCH_VERSION_MAJOR * 10000 + TORCH_VERSION_MINOR * 100 + TORCH_VERSION_PATCH;

  m.def(
      "_register_hccl", [](py::module& target) { bindings::registerHccl(target); },
      "Defines ProcessGroupHCCL in `target` (after torch.distributed is imported).");
  bindings::registerHcclWatchdog(m);
  bindings::registerLifecycle(m);
  bindings::registerFaultInject(m);
  bindings::registerIpc(m);
  bindings::registerGraph(m);
  bindings::registerXp(m);
  m.def("_route_cpu_kernel_ops", translated([] { return core::routeCpuKernelOpsToFallback(); }));
  m.def(
      "_half_gemm_block_bytes", [](int64_t bytes) { return core::setHalfGemmBlockBytes(bytes); },
      "Sets the fp32 workspace budget (bytes) of the bf16/fp16 GEMM kernels; returns the previous one.");
  m.def(
      "_half_kernels_enabled", [](bool on) { return core::setHalfKernelsEnabled(on); },
      "Turns the bf16/fp16 fp32-accumulating GEMM and convolution kernels on or off (benchmarks); returns the "
      "previous state.");
  m.def(
      "_bf16_attention_native", [](bool on) { return core::setBf16AttentionNative(on); },
      "Turns the native bf16 attention kernels (AVX512-BF16, core/aten/attention_bf16.h) on or off (tests, "
      "benchmarks); returns the previous state.");
  m.def(
      "_bf16_attention_native_available", [] { return core::bf16AttentionNative(); },
      "Whether SDPA's bf16 kernels run natively on this CPU (AVX512-BF16 present and not switched off).");
  m.def(
      "_half_gemm_native_bf16", [](bool on) { return core::setHalfGemmNativeBf16(on); },
      "Lets bf16 GEMMs run PyTorch's native CPU bf16 GEMM on CPUs with AVX512-BF16 (on) or always widen to "
      "fp32 (off); returns the previous state.");
  m.def(
      "_half_gemm_native_bf16_available", [] { return core::halfGemmNativeBf16(); },
      "Whether bf16 GEMMs take the native path here (AVX512-BF16 present and not switched off).");
  m.def(
      "_half_gemm_calls", [] { return core::halfGemmCalls(); },
      "Calls that took the bf16/fp16 widening path so far (core/aten/half_gemm.h).");
  m.def("_device_count", translated([] { return int(core::deviceCount()); }));
  m.def("_is_in_bad_fork", [] { return core::isInBadFork(); });
  m.def("_is_initialized", [] { return core::isInitialized(); });
  m.def("_profiler_set_step_trace", &profiler::setStepTrace,
        "While torch.profiler records npu activity, also record what a step trace needs (docs/plan.md).");
  m.def("_mark_initialized", translated([] {
          core::checkNotInBadFork();
          core::markInitialized();
        }));
  m.def("_device_count_no_throw", [] { return int(core::deviceCountNoThrow()); });
  m.def("_config_error", [] { return driver::clusterConfig().error; });
  m.def("_current_device", translated([] { return int(core::currentDevice()); }));
  m.def("_set_device", translated([](int device) {
          core::checkDeviceIndex(c10::DeviceIndex(device));
          core::setDevice(c10::DeviceIndex(device));
        }));
  m.def("_check_device", translated([](int device) { core::checkDeviceIndex(c10::DeviceIndex(device)); }));
  // torch.npu.synchronize's call, a plain C function (no pybind11 dispatch, ~1 us of a 16-element
  // xp op's cost otherwise): when the device is idle there is nothing to wait for, so no GIL release
  static PyMethodDef synchronize_def = {"_synchronize", synchronizeDevice, METH_O,
                                        "_synchronize(device): waits for all work queued on npu `device`."};
  m.attr("_synchronize") = py::reinterpret_steal<py::object>(PyCFunction_NewEx(&synchronize_def, nullptr, nullptr));
  if (!m.attr("_synchronize").ptr()) throw py::error_already_set();
  // Compiled (Inductor) kernels run outside the dispatcher, so the generated
  // wrapper calls this before each one: the same stream-order check every
  // eager npu kernel makes (one atomic load when nothing is pending).
  m.def("_wait_current_stream", translated([](int device) {
          const c10::DeviceIndex d = device < 0 ? core::currentDevice() : c10::DeviceIndex(device);
          if (C10_UNLIKELY(core::isInBadFork())) core::checkNotInBadFork();
          if (C10_LIKELY(!core::currentStreamHasPending(d))) return;
          // the pending work may be a Python host function, which needs the GIL
          py::gil_scoped_release no_gil;
          core::waitCurrentStream(d);
        }));
  m.def("_mem_get_info", translated([](int device) {
          core::checkDeviceIndex(c10::DeviceIndex(device));
          size_t free_b = 0, total = 0;
          NPU_CHECK(driver::getDriver().getMemInfo(device, &free_b, &total));
          return std::make_pair(free_b, total);
        }));
  m.def("_device_properties", translated([](int device) {
          core::checkDeviceIndex(c10::DeviceIndex(device));
          driver::DeviceProperties p;
          NPU_CHECK(driver::getDriver().getDeviceProperties(device, &p));
          py::dict d;
          d["name"] = p.name;
          d["total_memory"] = p.total_memory;
          d["multi_processor_count"] = p.multi_processor_count;
          d["major"] = p.major;
          d["minor"] = p.minor;
          d["physical_id"] = p.physical_id;
          return d;
        }));
  m.def("_device_of_ptr",
        [](uintptr_t ptr) { return driver::getDriver().deviceFromPtr(reinterpret_cast<void*>(ptr)); });

  m.def("_memory_stats", translated([](int device) {
          auto st = core::npuAllocator().getDeviceStats(c10::DeviceIndex(device));
          py::dict d;
          d["allocation"] = statArray(st.allocation);
          d["segment"] = statArray(st.segment);
          d["active"] = statArray(st.active);
          d["inactive_split"] = statArray(st.inactive_split);
          d["allocated_bytes"] = statArray(st.allocated_bytes);
          d["reserved_bytes"] = statArray(st.reserved_bytes);
          d["active_bytes"] = statArray(st.active_bytes);
          d["inactive_split_bytes"] = statArray(st.inactive_split_bytes);
          d["requested_bytes"] = statArray(st.requested_bytes);
          d["num_alloc_retries"] = st.num_alloc_retries;
          d["num_ooms"] = st.num_ooms;
          d["num_sync_all_streams"] = st.num_sync_all_streams;
          d["num_device_alloc"] = st.num_device_alloc;
          d["num_device_free"] = st.num_device_free;
          d["max_split_size"] = st.max_split_size;
          d["oversize_allocations"] = stat(st.oversize_allocations);
          d["oversize_segments"] = stat(st.oversize_segments);
          return d;
        }));
  m.def("_reset_peak_memory_stats",
        translated([](int device) { core::npuAllocator().resetPeakStats(c10::DeviceIndex(device)); }));
  m.def("_reset_accumulated_memory_stats",
        translated([](int device) { core::npuAllocator().resetAccumulatedStats(c10::DeviceIndex(device)); }));
  m.def("_empty_cache", translated([] { core::npuAllocator().emptyCache(); }));
  // Benchmark hook: mean nanoseconds of one allocate + free pair of `nbytes`
  // on the current npu, measured inside the extension (no Python, no ATen).
  m.def("_bench_allocator", translated([](size_t nbytes, int64_t iters) {
          c10::DeviceIndex d = core::currentDevice();
          {
            c10::DataPtr warm = core::npuAllocator().allocateOn(d, nbytes);
          }
          auto t0 = std::chrono::steady_clock::now();
          for (int64_t i = 0; i < iters; ++i) {
            c10::DataPtr p = core::npuAllocator().allocateOn(d, nbytes);
          }
          auto t1 = std::chrono::steady_clock::now();
          return double(std::chrono::duration_cast<std::chrono::nanoseconds>(t1 - t0).count()) / double(iters);
        }));
  m.def("_set_memory_fraction", translated([](double fraction, int device) {
          core::npuAllocator().setMemoryFraction(fraction, c10::DeviceIndex(device));
        }));
  m.def("_memory_limit", translated([](int device) {
          core::checkDeviceIndex(c10::DeviceIndex(device));
          return core::npuAllocator().memoryLimit(c10::DeviceIndex(device));
        }));
  // Pinned host allocator statistics (at::HostStats), for xp's pinned memory pool.
  m.def("_host_memory_stats", translated([] {
          at::HostStats st = at::getHostAllocator(c10::DeviceType::PrivateUse1)->get_stats();
          py::dict d;
          d["allocations"] = stat(st.allocations);
          d["allocated_bytes"] = stat(st.allocated_bytes);
          d["active_requests"] = stat(st.active_requests);
          d["active_bytes"] = stat(st.active_bytes);
          d["num_host_alloc"] = st.num_host_alloc;
          d["num_host_free"] = st.num_host_free;
          return d;
        }));
  m.def("_parse_alloc_config", translated([](const std::string& text) {
          core::AllocConfig c = core::parseAllocConfig(text);
          py::dict d;
          d["expandable_segments"] = c.expandable_segments;
          d["max_split_size"] = c.max_split_size == SIZE_MAX ? -1 : int64_t(c.max_split_size);
          d["garbage_collection_threshold"] = c.garbage_collection_threshold;
          d["roundup_power2_divisions"] = c.roundup_power2_divisions;
          d["per_process_memory_fraction"] = c.per_process_memory_fraction;
          return d;
        }));
  m.def("_record_memory_history", translated([](bool enabled, bool trace, size_t max_entries, bool python_frames) {
          core::npuAllocator().recordHistory(enabled, trace, max_entries, python_frames);
        }));
  m.def("_set_oom_observer", translated([](std::function<void(int64_t, int64_t)> fn) {
          core::npuAllocator().setOomObserver(std::move(fn));
        }));
  // Snapshot as PyTorch's memory snapshot dicts, Python frames symbolized here
  // (torch::symbolize needs the GIL, which this binding holds).
  m.def("_snapshot", translated([] {
          core::Snapshot snap = core::npuAllocator().snapshot();
          std::vector<torch::CapturedTraceback*> tracebacks;
          auto collect = [&](const std::shared_ptr<c10::GatheredContext>& c) {
            if (auto* tb = dynamic_cast<torch::CapturedTraceback*>(c.get())) tracebacks.push_back(tb);
          };
          for (const auto& s : snap.segments)
            for (const auto& b : s.blocks) collect(b.context);
          for (const auto& dev : snap.device_traces)
            for (const auto& t : dev) collect(t.context);
          torch::SymbolizedTracebacks symbolized = torch::symbolize(tracebacks);
          std::vector<py::object> frame_objects;
          for (const auto& f : symbolized.all_frames) {
            py::dict d;
            d["filename"] = f.filename;
            d["name"] = f.funcname;
            d["line"] = f.lineno;
            frame_objects.push_back(d);
          }
          size_t next = 0;
          auto ctx = [&](const std::shared_ptr<c10::GatheredContext>& c) -> py::list {
            py::list frames;
            if (!dynamic_cast<torch::CapturedTraceback*>(c.get())) return frames;
            for (uint64_t i : symbolized.tracebacks[next++]) frames.append(frame_objects[i]);
            return frames;
          };
          py::list segments;
          for (const auto& s : snap.segments) {
            py::dict seg;
            seg["device"] = s.device;
            seg["address"] = s.address;
            seg["total_size"] = s.total_size;
            seg["allocated_size"] = s.allocated_size;
            seg["active_size"] = s.active_size;
            seg["requested_size"] = s.requested_size;
            seg["stream"] = s.stream;
            seg["segment_type"] = s.small ? "small" : "large";
            seg["segment_pool_id"] = py::make_tuple(s.pool_id.first, s.pool_id.second);
            seg["is_expandable"] = s.expandable;
            seg["frames"] = py::list();
            py::list blocks;
            for (const auto& b : s.blocks) {
              py::dict blk;
              blk["address"] = b.address;
              blk["size"] = b.size;
              blk["requested_size"] = b.requested_size;
              blk["state"] = b.state;
              blk["frames"] = ctx(b.context);
              blocks.append(blk);
            }
            seg["blocks"] = blocks;
            segments.append(seg);
          }
          py::list traces;
          for (const auto& dev : snap.device_traces) {
            py::list entries;
            for (const auto& t : dev) {
              py::dict e;
              e["action"] = t.action;
              e["addr"] = t.address;
              e["size"] = t.size;
              e["stream"] = t.stream;
              e["time_us"] = t.time_us;
              e["frames"] = ctx(t.context);
              entries.append(e);
            }
            traces.append(entries);
          }
          py::dict out;
          out["segments"] = segments;
          out["device_traces"] = traces;
          return out;
        }));
  m.def("_default_generator", translated([](int device) {
          const at::Generator& gen = core::defaultNpuGenerator(c10::DeviceIndex(device));
          return py::reinterpret_steal<py::object>(THPGenerator_initDefaultGenerator(gen));
        }));

  // Graphs (the graph itself is torch._C._acceleratorGraph over core::graph::NpuGraph).
  // One atomic load: whether any stream of the process is capturing (a fast pre-check for
  // code that runs outside the dispatcher, e.g. npudist.xp's user kernels).
  m.def("_any_capture", [] { return core::graph::anyCapture(); });
  m.def("_graph_pool_handle", [] {
    c10::MempoolId_t id = core::graph::graphPoolHandle();
    return py::make_tuple(id.first, id.second);
  });
  m.def("_graph_pool_reserved_bytes", translated([](int device, std::pair<uint64_t, uint64_t> pool) {
          return core::npuAllocator().poolReservedBytes(c10::DeviceIndex(device), {pool.first, pool.second});
        }));

  // Deferred work on a stream, as aclrtLaunchCallback / cudaLaunchHostFunc:
  // the hook by which collectives (and tests) queue work behind a stream.
  m.def("_launch_host_func", translated([](int64_t stream_id, int64_t device, std::function<void()> fn) {
          c10::Stream s = streamOf(stream_id, device);
          if (core::captureDeferredWork(s, "host function", [fn] { fn(); })) return;
          core::launchDeferred(s, [fn = std::move(fn)] { fn(); });
        }),
        py::arg("stream_id"), py::arg("device"), py::arg("fn"));
}
