#pragma once
// npudist.xp's C fast paths (issue 21 step 6): host_ufunc.cpp (ufuncs), host_func.cpp (NumPy functions).
#include <Python.h>

namespace npudist::core::xp {

// The type npudist._C._XpHostUfunc (new reference), nullptr with a Python error set on failure.
PyObject* hostUfuncTypeObject();
// The type npudist._C._XpHostFunc (a NumPy function on views of xp arrays), new reference.
PyObject* hostFuncTypeObject();

}  // namespace npudist::core::xp
