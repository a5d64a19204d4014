// npudist._C bindings for graph replay of compiled code (npudist.graph.compile):
// the launcher of Inductor's C++ kernels on npu, and the bulk helpers the
// npugraphs backend calls once per replay instead of one Python call per tensor.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>
#include <torch/csrc/Exceptions.h>
#include <torch/csrc/autograd/python_variable.h>
#include <torch/csrc/utils/pybind.h>

#include <c10/util/SmallVector.h>

#include <cstring>
#include <string>
#include <vector>

#include "core/graph/capture.h"
#include "core/graph/capture_state.h"
#include "core/graph/kernel_call.h"
#include "core/stream.h"

namespace py = pybind11;
using namespace npudist;

namespace npudist::bindings {
namespace {

// One compiled C kernel (`extern "C" void kernel(...)` with pointer and int64
// parameters). Called with the tensors and ints Inductor's wrapper passes,
// it runs the kernel now, or, when its npu tensors' device has a capture on
// the current stream, records the call into that graph instead.
class NpuKernel {
 public:
  NpuKernel(uintptr_t fn, size_t nargs, std::string name)
      : fn_(reinterpret_cast<void*>(fn)), nargs_(nargs), name_(std::move(name)) {
    TORCH_CHECK(fn_ != nullptr, "compiled npu kernel ", name_, ": null function address");
    TORCH_CHECK(nargs_ <= core::graph::kMaxKernelArgs, "compiled npu kernel ", name_, " has ", nargs_,
                " arguments; at most ", core::graph::kMaxKernelArgs, " are supported");
  }

  void call(const py::args& args) {
    TORCH_CHECK(args.size() == nargs_, "compiled npu kernel ", name_, " takes ", nargs_, " arguments, got ",
                args.size());
    c10::SmallVector<intptr_t, 16> words(nargs_);
    c10::DeviceIndex device = -1;
    for (size_t i = 0; i < nargs_; ++i) {
      PyObject* o = PyTuple_GET_ITEM(args.ptr(), Py_ssize_t(i));
      if (THPVariable_Check(o)) {
        const at::Tensor& t = THPVariable_Unpack(o);
        words[i] = reinterpret_cast<intptr_t>(t.has_storage() ? t.data_ptr() : nullptr);
        if (device < 0 && t.device().type() == c10::DeviceType::PrivateUse1) device = t.device().index();
      } else if (PyLong_Check(o)) {
        Py_ssize_t v = PyLong_AsSsize_t(o);
        if (v == -1 && PyErr_Occurred()) throw py::error_already_set();
        words[i] = intptr_t(v);
      } else {
        TORCH_CHECK(false, "compiled npu kernel ", name_, ": argument ", i, " is a ", Py_TYPE(o)->tp_name,
                    "; expected a tensor or an int");
      }
    }
    if (device >= 0 && core::graph::anyCapture()) {
      if (core::graph::Capture* c = core::graph::captureOfCurrent(device)) {
        std::vector<at::Tensor> tensors;
        for (size_t i = 0; i < nargs_; ++i) {
          PyObject* o = PyTuple_GET_ITEM(args.ptr(), Py_ssize_t(i));
          if (THPVariable_Check(o)) tensors.push_back(THPVariable_Unpack(o));
        }
        core::graph::recordKernelCall(*c, name_, fn_, std::vector<intptr_t>(words.begin(), words.end()), tensors,
                                      core::currentStreamId(device));
        return;
      }
    }
    core::graph::callKernel(fn_, words.data(), nargs_);
  }

  const std::string& name() const { return name_; }

 private:
  void* fn_;
  size_t nargs_;
  std::string name_;
};

// dst[i] <- src[i] for each pair whose addresses differ (static graph inputs
// from the caller's tensors). Same shape required; a plain memcpy when both
// are contiguous with one dtype, else Tensor::copy_.
void copyInputs(const std::vector<at::Tensor>& dsts, const std::vector<at::Tensor>& srcs) {
  TORCH_CHECK(dsts.size() == srcs.size(), "_copy_inputs: ", dsts.size(), " destinations, ", srcs.size(), " sources");
  bool waited = false;
  for (size_t i = 0; i < dsts.size(); ++i) {
    const at::Tensor& d = dsts[i];
    const at::Tensor& s = srcs[i];
    if (d.data_ptr() == s.data_ptr() && d.strides() == s.strides()) continue;
    TORCH_CHECK_VALUE(d.sizes() == s.sizes(), "npu graph input ", i, " has shape ", s.sizes(),
                      "; the graph was captured for ", d.sizes());
    if (!waited && s.device().type() == c10::DeviceType::PrivateUse1) {
      core::waitCurrentStream(s.device().index());  // a pending collective may write s
      waited = true;
    }
    if (d.dtype() == s.dtype() && d.device() == s.device() && d.is_contiguous() && s.is_contiguous() && !s.is_conj() &&
        !s.is_neg()) {
      if (s.nbytes()) std::memmove(d.data_ptr(), s.data_ptr(), s.nbytes());
    } else {
      d.copy_(s);
    }
  }
}

}  // namespace

void registerGraph(py::module& m) {
  py::class_<NpuKernel>(m, "_NpuKernel",
                        "A compiled npu kernel: runs it, or records it into the npu graph capturing the current "
                        "stream (npudist.graph.compile).")
      .def(py::init<uintptr_t, size_t, std::string>(), py::arg("fn"), py::arg("nargs"), py::arg("name"))
      .def("__call__",
           [](NpuKernel& k, py::args args) {
             HANDLE_TH_ERRORS
             k.call(args);
             END_HANDLE_TH_ERRORS_PYBIND
           })
      .def_property_readonly("name", &NpuKernel::name);
  m.attr("_MAX_KERNEL_ARGS") = core::graph::kMaxKernelArgs;
  m.def("_copy_inputs", [](const std::vector<at::Tensor>& dsts, const std::vector<at::Tensor>& srcs) {
    HANDLE_TH_ERRORS
    copyInputs(dsts, srcs);
    END_HANDLE_TH_ERRORS_PYBIND
  });
  // Storage use counts: how many tensors (and storage objects) share each storage.
  m.def("_storage_use_counts", [](const std::vector<at::Tensor>& ts) {
    std::vector<int64_t> out;
    out.reserve(ts.size());
    for (const at::Tensor& t : ts) out.push_back(t.has_storage() ? int64_t(t.storage().use_count()) : 0);
    return out;
  });
  // New tensors over the same memory, with their own metadata and version
  // counter (what a replay hands out, so autograd never edits the graph's own).
  m.def("_fresh_aliases", [](const std::vector<at::Tensor>& ts) {
    std::vector<at::Tensor> out;
    out.reserve(ts.size());
    for (const at::Tensor& t : ts) {
      if (!t.defined()) {
        out.emplace_back();
        continue;
      }
      out.emplace_back(t.unsafeGetTensorImpl()->shallow_copy_and_detach(c10::VariableVersion(0), true));
    }
    return out;
  });
}

}  // namespace npudist::bindings
