#pragma once
// Every Python name npudist.xp's C code reads from xp's own objects: slots of xp.ndarray, keys of
// the settings dict it is handed (npudist.xp._host's globals), the float64 setting, the methods of
// xp's ufunc class, and the function attributes its callables forward. The one list: each name is
// interned once by internPythonNames() and used through its variable, and
// tests/xp/test_native_names.py checks that every name exists where its third column says (a
// Python expression over `xp`, npudist.xp), so a rename on the Python side fails a test instead of
// silently turning a fast path off.
#include <Python.h>

// X(variable, "name", "where it is read from")
#define NPUDIST_XP_PYTHON_NAMES(X)                                                                          \
  X(s_t, "_t", "xp.ndarray")                              /* slot: the array's tensor */                    \
  X(s_h, "_h", "xp.ndarray")                              /* slot: the cached zero-copy NumPy view */       \
  X(s_ENABLED, "ENABLED", "xp._host")                     /* setting: NumPy's loops on npu memory at all */ \
  X(s_FAST, "FAST", "xp._host")                           /* setting: the C fast paths */                   \
  X(s_SMALL, "SMALL", "xp._host")                         /* setting: element count of a "small" call */    \
  X(s_float64_mode, "float64_mode", "xp._config.state")   /* slot: 'off' keeps float64 on torch */          \
  X(s_call, "_call", "xp._ufunc.ufunc")                   /* the Python call with keywords */               \
  X(s_call_declined, "_call_declined", "xp._ufunc.ufunc") /* the call after the fast path declined */       \
  X(s_fast_attr, "_fast", "xp._ufunc.ufunc")              /* member: the ufunc's _XpHostUfunc */            \
  X(s_qualname, "__qualname__", "xp.sum")                 /* a numpy_first function: repr and pickling */   \
  X(s_name, "__name__", "xp.ndarray.__add__")             /* an operator's Python fallback */               \
  X(s_doc, "__doc__", "xp.ndarray.__add__")               /* an operator's Python fallback */

namespace npudist::xp {

#define NPUDIST_XP_DECLARE_NAME(var, name, where) inline PyObject* var = nullptr;
NPUDIST_XP_PYTHON_NAMES(NPUDIST_XP_DECLARE_NAME)
#undef NPUDIST_XP_DECLARE_NAME

// Interns every name above (once); false with a Python error set on failure.
inline bool internPythonNames() {
  if (s_doc) return true;
#define NPUDIST_XP_INTERN_NAME(var, name, where) \
  if (!var && !(var = PyUnicode_InternFromString(name))) return false;
  NPUDIST_XP_PYTHON_NAMES(NPUDIST_XP_INTERN_NAME)
#undef NPUDIST_XP_INTERN_NAME
  return true;
}

}  // namespace npudist::xp
