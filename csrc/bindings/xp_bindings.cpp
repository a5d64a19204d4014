// npudist.xp's native fast paths in npudist._C (behaviour in csrc/xp). Registered lazily:
// `import npudist` loads _C without NumPy; npudist.xp (npudist/xp/_native.py) calls
// _C._xp_register() on its first import, which imports NumPy's C API and adds the types.
#include <pybind11/pybind11.h>

#include "xp/host_ufunc.h"

namespace py = pybind11;

namespace npudist::bindings {

namespace {

py::object adopt(PyObject* type) {
  if (!type) throw py::error_already_set();
  return py::reinterpret_steal<py::object>(type);
}

}  // namespace

void registerXp(py::module& m) {
  m.def(
      "_xp_register",
      [m]() mutable {
        if (py::hasattr(m, "_XpUfuncOp")) return;
        m.attr("_XpHostUfunc") = adopt(xp::hostUfuncTypeObject());
        m.attr("_XpHostFunc") = adopt(xp::hostFuncTypeObject());
        m.attr("_XpUfuncBase") = adopt(xp::ufuncBaseTypeObject());
        m.attr("_XpUfuncOp") = adopt(xp::ufuncOpTypeObject());
      },
      "Adds npudist.xp's C types (_XpHostUfunc, _XpHostFunc, _XpUfuncBase, _XpUfuncOp) to this module; "
      "imports NumPy's C API (ImportError without NumPy). Called by npudist.xp on its first import; "
      "idempotent.");
}

}  // namespace npudist::bindings
