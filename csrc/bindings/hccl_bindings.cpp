// Python binding of the hccl backend: ProcessGroupHCCL as a subclass of
// torch's c10d Backend class. Defined on request (npudist.hccl calls
// _C._register_hccl after importing torch.distributed, which registers the
// base class with pybind11).
#include <pybind11/chrono.h>
#include <pybind11/functional.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>
#include <torch/csrc/Exceptions.h>
#include <torch/csrc/utils/pybind.h>

#include "hccl/fault_hooks.h"
#include "hccl/process_group_hccl.h"
#include "hccl/shm_wait.h"

namespace py = pybind11;
using npudist::hccl::ProcessGroupHCCL;

namespace npudist::bindings {

namespace {

// Calls the Python Gloo factory with the GIL held; the callable itself is
// released with the GIL too.
npudist::hccl::GlooFactory wrapFactory(py::object factory) {
  if (factory.is_none()) return nullptr;
  auto holder = std::shared_ptr<py::object>(new py::object(std::move(factory)), [](py::object* p) {
    py::gil_scoped_acquire gil;
    delete p;
  });
  return [holder](const c10::intrusive_ptr<c10d::Store>& store, int rank, int size, std::chrono::milliseconds timeout) {
    py::gil_scoped_acquire gil;
    py::object backend = (*holder)(store, rank, size, timeout);
    return backend.cast<c10::intrusive_ptr<c10d::Backend>>();
  };
}

}  // namespace

void registerHccl(py::module& m) {
  using Options = ProcessGroupHCCL::Options;
  auto cls =
      py::class_<ProcessGroupHCCL, c10d::Backend, c10::intrusive_ptr<ProcessGroupHCCL>>(
          m, "ProcessGroupHCCL",
          R"(npudist's c10d backend "hccl".

Create it through torch.distributed (init_process_group("hccl"), new_group);
the constructor is what the backend registry calls.)")
          .def(py::init([](const c10::intrusive_ptr<c10d::Store>& store, int rank, int size,
                           std::chrono::milliseconds timeout, const std::string& group_name,
                           const std::vector<uint64_t>& global_ranks, py::object gloo_factory, int home_device) {
                 HANDLE_TH_ERRORS
                 auto factory = wrapFactory(std::move(gloo_factory));
                 auto opts = c10::make_intrusive<Options>(timeout);
                 opts->group_name = group_name;
                 opts->global_ranks_in_group = global_ranks;
                 // Setup waits on the store and on peers: let other Python threads run.
                 py::gil_scoped_release nogil;
                 return c10::make_intrusive<ProcessGroupHCCL>(npudist::hccl::storeForFaults(store), rank, size, opts,
                                                              std::move(factory), home_device);
                 END_HANDLE_TH_ERRORS_PYBIND
               }),
               py::arg("store"), py::arg("rank"), py::arg("size"), py::arg("timeout"), py::arg("group_name"),
               py::arg("global_ranks"), py::arg("gloo_factory"), py::arg("home_device"))
          .def(
              "perform_nocolor_split", [](ProcessGroupHCCL&, const at::Device&) {},
              "Called by torch.distributed on ranks outside a new sub-group; hccl groups are made "
              "from the store alone, so there is nothing to do.")
          .def_property_readonly(
              "hosts", [](const ProcessGroupHCCL& pg) { return pg.topology().hosts; },
              "Host identities of the group, ordered by their lowest rank.")
          .def_property_readonly(
              "local_ranks", [](const ProcessGroupHCCL& pg) { return pg.topology().local_ranks; },
              "Group ranks on this rank's host.")
          .def_property_readonly("home_device", &ProcessGroupHCCL::homeDevice,
                                 "The npu whose stream carries this group's collectives.")
          .def_property_readonly(
              "options",
              [](ProcessGroupHCCL& pg) { return c10::static_intrusive_pointer_cast<Options>(pg.getBackendOptions()); },
              "The group's options (timeout, name); split_group copies them for the new group.");
  m.def(
      "_hccl_wait_stats",
      [] {
        const npudist::hccl::WaitStats s = npudist::hccl::waitStats();
        py::dict d;
        d["waits"] = s.waits;
        d["ready_spinning"] = s.ready_spinning;
        d["ready_yielding"] = s.ready_yielding;
        d["ready_sleeping"] = s.ready_sleeping;
        d["yields"] = s.yields;
        d["futex_sleeps"] = s.futex_sleeps;
        d["spin_ns"] = s.spin_ns;
        d["yield_ns"] = s.yield_ns;
        d["sleep_ns"] = s.sleep_ns;
        return d;
      },
      "How this process's hccl collectives waited for peers since the last reset (benchmarks): waits = "
      "waits that found the peer not there yet; ready_spinning/_yielding/_sleeping = in which phase they "
      "ended; yields, futex_sleeps; spin_ns/yield_ns/sleep_ns = total time of the waits that ended in each phase.");
  m.def("_hccl_reset_wait_stats", [] { npudist::hccl::resetWaitStats(); }, "Zeroes _hccl_wait_stats().");
  // split_group deep-copies the parent's options, so they must be copyable.
  py::class_<Options, c10d::Backend::Options, c10::intrusive_ptr<Options>>(cls, "Options")
      .def(py::init([](std::chrono::milliseconds timeout) { return c10::make_intrusive<Options>(timeout); }),
           py::arg("timeout") = kBackendDefaultTimeout)
      .def("__copy__", [](const Options& o) { return c10::make_intrusive<Options>(o); })
      .def("__deepcopy__", [](const Options& o, py::dict) { return c10::make_intrusive<Options>(o); });
}

}  // namespace npudist::bindings
