// Python access to the hccl watchdog's bookkeeping: the statistics snapshot
// npudist.watchdog exposes to Prometheus, flight-recorder dumps on demand,
// and the Python-frame capture the flight recorder uses when asked
// (NPUDIST_HCCL_TRACE_FRAMES=1).
#include <Python.h>
#include <frameobject.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include "hccl/engine.h"
#include "hccl/flight_recorder.h"
#include "hccl/group_stats.h"
#include "hccl/watchdog.h"

namespace py = pybind11;
using namespace npudist::hccl;

namespace npudist::bindings {
namespace {

std::vector<Frame> capturePythonFrames() {
  std::vector<Frame> out;
  if (!Py_IsInitialized()) return out;
  py::gil_scoped_acquire gil;
  PyFrameObject* f = PyEval_GetFrame();
  Py_XINCREF(f);
  while (f && out.size() < 64) {
    PyCodeObject* code = PyFrame_GetCode(f);
    const char* name = PyUnicode_AsUTF8(code->co_name);
    const char* file = PyUnicode_AsUTF8(code->co_filename);
    out.push_back({name ? name : "?", file ? file : "?", PyFrame_GetLineNumber(f)});
    Py_DECREF(code);
    PyFrameObject* back = PyFrame_GetBack(f);
    Py_DECREF(f);
    f = back;
  }
  Py_XDECREF(f);
  return out;
}

py::dict statsSnapshot() {
  py::dict out;
  out["latency_buckets_s"] = latencyBounds();
  auto age = Watchdog::get().heartbeatAgeSeconds();
  out["watchdog_heartbeat_age_s"] = age ? py::cast(*age) : py::none();
  out["flight_recorder_entries"] = FlightRecorder::get().size();
  py::list groups;
  for (const auto& g : liveGroups()) {
    auto s = g->snapshot();
    py::dict d;
    d["group"] = g->name;
    d["desc"] = g->desc();
    d["rank"] = g->rank;
    d["size"] = g->size;
    py::dict ops;
    for (int k = 0; k < kNumOpKinds; ++k) {
      const OpCounters& c = s.ops[size_t(k)];
      if (!c.started && !c.failed) continue;
      py::dict o;
      o["started"] = c.started;
      o["completed"] = c.completed;
      o["failed"] = c.failed;
      o["bytes"] = c.bytes;
      o["bus_bytes"] = c.bus_bytes;
      o["seconds_sum"] = c.seconds;
      o["latency_buckets"] = c.buckets;
      ops[opKindName(k)] = o;
    }
    d["ops"] = ops;
    d["in_flight"] = s.in_flight;
    d["oldest_in_flight_age_s"] = s.oldest_in_flight_age_s;
    d["timeouts"] = s.timeouts;
    d["mismatches"] = s.mismatches;
    double score = 0;
    if (auto e = g->engine.lock()) {
      auto scores = e->local().stragglerScores();
      score = scores[size_t(e->local().index())];
    }
    d["straggler_score_s"] = score;
    groups.append(d);
  }
  out["groups"] = groups;
  return out;
}

}  // namespace

void registerHcclWatchdog(py::module& m) {
  FlightRecorder::setFrameCapture(&capturePythonFrames);
  m.def(
      "_hccl_stats", [] { return statsSnapshot(); },
      "Snapshot of the hccl backend's per-group counters (see docs/metrics.md).");
  m.def(
      "_hccl_flight_recorder_pickle",
      [] {
        std::string bytes;
        {
          py::gil_scoped_release nogil;
          bytes = FlightRecorder::get().pickle();
        }
        return py::bytes(bytes);
      },
      "This process's flight recorder as pickle bytes (PyTorch's schema).");
  m.def(
      "_hccl_dump_flight_recorder",
      [](const std::string& path) {
        py::gil_scoped_release nogil;
        const std::string p = path.empty() ? FlightRecorder::defaultPath(processGlobalRank()) : path;
        std::string err = FlightRecorder::get().writeTo(p);
        if (!err.empty()) throw std::runtime_error("flight recorder dump failed: " + err);
        return p;
      },
      py::arg("path") = "", "Writes the flight recorder to `path` (default: TORCH_HCCL_DEBUG_INFO_TEMP_FILE + rank).");
  m.def(
      "_hccl_request_job_dump",
      [] {
        py::gil_scoped_release nogil;
        return Watchdog::get().requestJobDump();
      },
      "Asks every rank of the job (through the store) to dump its flight recorder.");
  m.def("_hccl_flight_recorder_capacity", [] { return FlightRecorder::get().capacity(); });
}

}  // namespace npudist::bindings
