#pragma once
// npudist.xp's C fast paths: host_ufunc.cpp (ufuncs), host_func.cpp (NumPy functions).
#include <Python.h>

namespace npudist::xp {

// The type npudist._C._XpHostUfunc (new reference), nullptr with a Python error set on failure.
PyObject* hostUfuncTypeObject();
// The type npudist._C._XpHostFunc (a NumPy function on views of xp arrays), new reference.
PyObject* hostFuncTypeObject();
// The types npudist._C._XpUfuncBase (the base class of xp's ufuncs: calls try the fast path in C
// first) and npudist._C._XpUfuncOp (ndarray's operators), new references (ufunc_callable.cpp).
PyObject* ufuncBaseTypeObject();
PyObject* ufuncOpTypeObject();
// `fast`'s call (an _XpHostUfunc; anything else declines) with positional operands only: the result,
// None when it declines, nullptr with an error set.
PyObject* hostUfuncCall(PyObject* fast, PyObject* const* args, Py_ssize_t nargs);

}  // namespace npudist::xp
