// npudist.xp's native fast paths in npudist._C (behaviour in csrc/core/xp).
#include <pybind11/pybind11.h>

#include "core/xp/host_ufunc.h"

namespace py = pybind11;

namespace npudist::bindings {

void registerXp(py::module& m) {
  PyObject* type = core::xp::hostUfuncTypeObject();
  if (!type) throw py::error_already_set();
  m.attr("_XpHostUfunc") = py::reinterpret_steal<py::object>(type);
  PyObject* func = core::xp::hostFuncTypeObject();
  if (!func) throw py::error_already_set();
  m.attr("_XpHostFunc") = py::reinterpret_steal<py::object>(func);
  PyObject* base = core::xp::ufuncBaseTypeObject();
  if (!base) throw py::error_already_set();
  m.attr("_XpUfuncBase") = py::reinterpret_steal<py::object>(base);
  PyObject* op = core::xp::ufuncOpTypeObject();
  if (!op) throw py::error_already_set();
  m.attr("_XpUfuncOp") = py::reinterpret_steal<py::object>(op);
}

}  // namespace npudist::bindings
