// Python access to npu memory sharing between processes (core/ipc.h);
// npudist.device.ipc builds torch.multiprocessing support on it.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>
#include <torch/csrc/Exceptions.h>
#include <torch/csrc/utils/pybind.h>

#include <ATen/ATen.h>

#include "core/device.h"
#include "core/ipc.h"
#include "hccl/zero_copy.h"

namespace py = pybind11;

namespace npudist::bindings {

void registerIpc(py::module& m) {
  m.def(
      "_ipc_export",
      [](const at::Tensor& t) {
        HANDLE_TH_ERRORS
        core::ipc::ExportedStorage e;
        {
          py::gil_scoped_release no_gil;
          e = core::ipc::exportStorage(t.storage());
        }
        return py::make_tuple(e.device, e.mem_fd, e.extents, e.offset, e.nbytes, e.counter_fd, e.counter_token, e.slot,
                              e.entry_id);
        END_HANDLE_TH_ERRORS_PYBIND
      },
      "Exports the storage of npu tensor t: (device, mem_fd, extents, offset, nbytes, counter_fd, counter_token, "
      "slot, entry_id). The fds belong to npudist: dup them to pass them on. Counts one consumer reference.");
  m.def(
      "_ipc_import",
      [](int64_t device, int mem_fd, const std::vector<std::pair<size_t, size_t>>& extents, size_t offset,
         size_t nbytes, int counter_fd, uint64_t counter_token, int64_t slot) {
        HANDLE_TH_ERRORS
        c10::Storage s =
            core::ipc::importStorage(device, mem_fd, extents, offset, nbytes, counter_fd, counter_token, slot);
        at::Tensor t =
            at::empty({0}, at::TensorOptions().dtype(at::kByte).device(core::npuDevice(c10::DeviceIndex(device))));
        t.set_(std::move(s));
        return t;
        END_HANDLE_TH_ERRORS_PYBIND
      },
      "Maps an exported npu storage; returns a uint8 npu tensor viewing all of it.");
  m.def(
      "_ipc_release_reference",
      [](int counter_fd, uint64_t counter_token, int64_t slot) {
        HANDLE_TH_ERRORS
        core::ipc::releaseReference(counter_fd, counter_token, slot);
        END_HANDLE_TH_ERRORS_PYBIND
      },
      "Drops one consumer reference of an exported storage without mapping it.");
  m.def(
      "_hccl_zero_copy_count", [] { return hccl::zeroCopyCollectiveCount(); },
      "Collectives this process ran on hccl's zero-copy path.");
  m.def(
      "_hccl_set_zero_copy", [](bool on) { hccl::setZeroCopyEnabled(on); },
      "Turns hccl's zero-copy collectives on or off in this process (overrides NPUDIST_HCCL_ZERO_COPY).");
  m.def(
      "_hccl_zero_copy_break_completion_for_tests", [](bool on) { hccl::setZeroCopySkipClosingStep(on); },
      "Tests only: zero-copy collectives skip their closing step, so a Work completes before peers finished "
      "with its buffers (breaks the correctness rule; shows the free/reuse race test catches it). Every rank "
      "of a group must set the same value.");
  m.def(
      "_ipc_collect",
      [] {
        HANDLE_TH_ERRORS
        return core::ipc::collect();
        END_HANDLE_TH_ERRORS_PYBIND
      },
      "Releases exported storages no consumer holds; returns how many consumers still hold.");
}

}  // namespace npudist::bindings
