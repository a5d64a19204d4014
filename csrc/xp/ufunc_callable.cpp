// xp's ufuncs and ndarray's operators as C callables: the fast path
// (host_ufunc.cpp) runs first, straight from the call, and the Python path is the fallback.
//
// - _XpUfuncBase: the base class of npudist.xp._ufunc.ufunc. Calling an instance with positional
//   operands only runs its `_fast` (an _XpHostUfunc) and, when that declines, the Python method
//   `_call_declined(*args)`; calls with keywords (or without a fast path) go to `_call(*args, **kw)`.
//   Before, a Python __call__ frame sat in front of the C call: ~3,500 instructions of a ~14,000
//   instruction 16-element xp.add.
// - _XpUfuncOp(ufunc, fallback, reflected): an operator of xp.ndarray (``__add__ = ...``). It is a
//   method descriptor, so ``a + b`` calls it as op(a, b) without a bound method; it runs the ufunc's
//   fast path on (a, b) (reflected: (b, a)) and otherwise the original Python operator `fallback`.
#include "xp/host_ufunc.h"
#include "xp/python_names.h"

#include <structmember.h>

#include <vector>

namespace npudist::xp {
namespace {

struct UfuncBase {
  PyObject_HEAD vectorcallfunc vectorcall;
  PyObject* fast;  // the _XpHostUfunc of this ufunc, or None / another callable (then no C fast path)
};

// self.<name>(*args, **kw) with args/kwnames as a vectorcall gives them.
PyObject* callMethod(PyObject* self, PyObject* name, PyObject* const* args, size_t nargsf, PyObject* kwnames) {
  const Py_ssize_t n = PyVectorcall_NARGS(nargsf);
  const Py_ssize_t total = n + (kwnames ? PyTuple_GET_SIZE(kwnames) : 0);
  if (nargsf & PY_VECTORCALL_ARGUMENTS_OFFSET) {
    // the caller lets us use args[-1]: self goes there, no copy
    PyObject** a = const_cast<PyObject**>(args) - 1;
    PyObject* saved = a[0];
    a[0] = self;
    PyObject* r = PyObject_VectorcallMethod(name, a, size_t(n + 1), kwnames);
    a[0] = saved;
    return r;
  }
  PyObject* small[8];
  std::vector<PyObject*> big;
  PyObject** a = small;
  if (total + 1 > 8) {
    big.resize(size_t(total + 1));
    a = big.data();
  }
  a[0] = self;
  for (Py_ssize_t i = 0; i < total; ++i) a[i + 1] = args[i];
  return PyObject_VectorcallMethod(name, a, size_t(n + 1), kwnames);
}

PyObject* ufuncBaseCall(PyObject* self, PyObject* const* args, size_t nargsf, PyObject* kwnames) {
  auto* u = reinterpret_cast<UfuncBase*>(self);
  if (!kwnames && u->fast) {
    PyObject* r = hostUfuncCall(u->fast, args, PyVectorcall_NARGS(nargsf));
    if (r != Py_None) return r;  // the result, or nullptr with the error
    Py_DECREF(r);
    return callMethod(self, s_call_declined, args, nargsf, nullptr);
  }
  return callMethod(self, s_call, args, nargsf, kwnames);
}

PyObject* ufuncBaseNew(PyTypeObject* type, PyObject*, PyObject*) {
  // (the arguments are __init__'s: the Python subclass sets `_fast` there)
  auto* self = reinterpret_cast<UfuncBase*>(type->tp_alloc(type, 0));
  if (!self) return nullptr;
  self->vectorcall = ufuncBaseCall;
  return reinterpret_cast<PyObject*>(self);
}

int ufuncBaseTraverse(PyObject* o, visitproc visit, void* arg) {
  // (a Python subclass's own traverse visits its type and __dict__, then calls this)
  Py_VISIT(reinterpret_cast<UfuncBase*>(o)->fast);
  return 0;
}

int ufuncBaseClear(PyObject* o) {
  Py_CLEAR(reinterpret_cast<UfuncBase*>(o)->fast);
  return 0;
}

void ufuncBaseDealloc(PyObject* o) {
  // (for a Python subclass's instance, its own dealloc runs first and drops the type's reference)
  PyObject_GC_UnTrack(o);
  ufuncBaseClear(o);
  Py_TYPE(o)->tp_free(o);
}

PyMemberDef ufuncBaseMembers[] = {
    {"_fast", T_OBJECT, offsetof(UfuncBase, fast), 0,
     "The ufunc's C fast path (npudist._C._XpHostUfunc), or a callable returning None (none)."},
    {nullptr, 0, 0, 0, nullptr}};

// Python subclasses (heap types) of a vectorcall type do not inherit Py_TPFLAGS_HAVE_VECTORCALL
// before Python 3.12: calls then go through tp_call with an argument tuple. A subclass that does
// not define __call__ keeps our tp_call, so its instances may take the vectorcall directly (what
// 3.12 does for such subclasses).
int ufuncBaseInitSubclass(PyTypeObject* sub) {
  if (sub->tp_call == PyVectorcall_Call && sub->tp_vectorcall_offset == offsetof(UfuncBase, vectorcall))
    sub->tp_flags |= Py_TPFLAGS_HAVE_VECTORCALL;
  return 0;
}

PyObject* ufuncBaseInitSubclassMethod(PyObject* cls, PyObject*) {
  // __init_subclass__ is an implicit classmethod: cls is the new subclass
  if (PyType_Check(cls)) ufuncBaseInitSubclass(reinterpret_cast<PyTypeObject*>(cls));
  Py_RETURN_NONE;
}

PyMethodDef ufuncBaseMethods[] = {{"__init_subclass__", ufuncBaseInitSubclassMethod, METH_NOARGS | METH_CLASS,
                                   "Lets a subclass that keeps this __call__ take calls without an argument tuple."},
                                  {nullptr, nullptr, 0, nullptr}};

PyTypeObject ufuncBaseType = {PyVarObject_HEAD_INIT(nullptr, 0) "npudist._C._XpUfuncBase"};

// ---- ndarray's operators ----

struct UfuncOp {
  PyObject_HEAD vectorcallfunc vectorcall;
  PyObject* ufunc;     // the engine ufunc (an _XpUfuncBase instance)
  PyObject* fallback;  // the Python operator (a function of (self[, other]))
  int reflected;       // __radd__ & co: the ufunc takes (other, self)
};

PyObject* ufuncOpCall(PyObject* self, PyObject* const* args, size_t nargsf, PyObject* kwnames) {
  auto* op = reinterpret_cast<UfuncOp*>(self);
  const Py_ssize_t n = PyVectorcall_NARGS(nargsf);
  PyObject* fast = reinterpret_cast<UfuncBase*>(op->ufunc)->fast;
  if (!kwnames && fast && (n == 1 || n == 2)) {
    PyObject* swapped[2];
    PyObject* const* a = args;
    if (op->reflected && n == 2) {
      swapped[0] = args[1];
      swapped[1] = args[0];
      a = swapped;
    }
    PyObject* r = hostUfuncCall(fast, a, n);
    if (r != Py_None) return r;
    Py_DECREF(r);
  }
  return PyObject_Vectorcall(op->fallback, args, nargsf, kwnames);
}

PyObject* ufuncOpNew(PyTypeObject* type, PyObject* args, PyObject* kwargs) {
  PyObject *ufunc, *fallback;
  int reflected = 0;
  static const char* kw[] = {"ufunc", "fallback", "reflected", nullptr};
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OO|p:_XpUfuncOp", const_cast<char**>(kw), &ufunc, &fallback,
                                   &reflected))
    return nullptr;
  if (!PyObject_TypeCheck(ufunc, &ufuncBaseType) || !PyCallable_Check(fallback)) {
    PyErr_SetString(PyExc_TypeError, "_XpUfuncOp: ufunc must be an xp ufunc (_XpUfuncBase) and fallback callable");
    return nullptr;
  }
  auto* self = reinterpret_cast<UfuncOp*>(type->tp_alloc(type, 0));
  if (!self) return nullptr;
  self->vectorcall = ufuncOpCall;
  Py_INCREF(ufunc);
  Py_INCREF(fallback);
  self->ufunc = ufunc;
  self->fallback = fallback;
  self->reflected = reflected;
  return reinterpret_cast<PyObject*>(self);
}

int ufuncOpTraverse(PyObject* o, visitproc visit, void* arg) {
  Py_VISIT(reinterpret_cast<UfuncOp*>(o)->ufunc);
  Py_VISIT(reinterpret_cast<UfuncOp*>(o)->fallback);
  return 0;
}

int ufuncOpClear(PyObject* o) {
  Py_CLEAR(reinterpret_cast<UfuncOp*>(o)->ufunc);
  Py_CLEAR(reinterpret_cast<UfuncOp*>(o)->fallback);
  return 0;
}

void ufuncOpDealloc(PyObject* o) {
  PyObject_GC_UnTrack(o);
  ufuncOpClear(o);
  Py_TYPE(o)->tp_free(o);
}

// a.__add__ is a bound method, as for the Python function it replaces
PyObject* ufuncOpGet(PyObject* self, PyObject* obj, PyObject*) {
  if (!obj || obj == Py_None) {
    Py_INCREF(self);
    return self;
  }
  return PyMethod_New(self, obj);
}

// closure: the address of the attribute's interned name (python_names.h; set before the type is ready)
PyObject* ufuncOpAttr(PyObject* self, void* name) {
  return PyObject_GetAttr(reinterpret_cast<UfuncOp*>(self)->fallback, *static_cast<PyObject**>(name));
}

PyGetSetDef ufuncOpGetset[] = {{"__name__", ufuncOpAttr, nullptr, nullptr, &s_name},
                               {"__qualname__", ufuncOpAttr, nullptr, nullptr, &s_qualname},
                               {"__doc__", ufuncOpAttr, nullptr, nullptr, &s_doc},
                               {nullptr, nullptr, nullptr, nullptr, nullptr}};

PyMemberDef ufuncOpMembers[] = {
    {"__wrapped__", T_OBJECT, offsetof(UfuncOp, fallback), READONLY, "The Python operator (the fallback)."},
    {"ufunc", T_OBJECT, offsetof(UfuncOp, ufunc), READONLY, "The engine ufunc."},
    {nullptr, 0, 0, 0, nullptr}};

PyTypeObject ufuncOpType = {PyVarObject_HEAD_INIT(nullptr, 0) "npudist._C._XpUfuncOp"};

}  // namespace

PyObject* ufuncBaseTypeObject() {
  static bool ready = false;
  if (!ready) {
    if (!internPythonNames()) return nullptr;
    ufuncBaseType.tp_basicsize = sizeof(UfuncBase);
    ufuncBaseType.tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL;
    ufuncBaseType.tp_doc =
        "Base class of npudist.xp's ufuncs: a call with positional operands runs the C fast path `_fast` "
        "first, then the Python method `_call_declined(*args)`; other calls run `_call(*args, **kwargs)`.";
    ufuncBaseType.tp_new = ufuncBaseNew;
    ufuncBaseType.tp_dealloc = ufuncBaseDealloc;
    ufuncBaseType.tp_traverse = ufuncBaseTraverse;
    ufuncBaseType.tp_clear = ufuncBaseClear;
    ufuncBaseType.tp_call = PyVectorcall_Call;
    ufuncBaseType.tp_vectorcall_offset = offsetof(UfuncBase, vectorcall);
    ufuncBaseType.tp_members = ufuncBaseMembers;
    ufuncBaseType.tp_methods = ufuncBaseMethods;
    if (PyType_Ready(&ufuncBaseType) < 0) return nullptr;
    ready = true;
  }
  Py_INCREF(&ufuncBaseType);
  return reinterpret_cast<PyObject*>(&ufuncBaseType);
}

PyObject* ufuncOpTypeObject() {
  static bool ready = false;
  if (!ready) {
    if (!ufuncBaseTypeObject()) return nullptr;
    Py_DECREF(&ufuncBaseType);
    ufuncOpType.tp_basicsize = sizeof(UfuncOp);
    ufuncOpType.tp_flags =
        Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL | Py_TPFLAGS_METHOD_DESCRIPTOR;
    ufuncOpType.tp_doc =
        "_XpUfuncOp(ufunc, fallback, reflected=False)\n\nAn operator of npudist.xp.ndarray: op(a[, b]) runs "
        "`ufunc`'s C fast path on (a, b) ((b, a) when reflected) and otherwise `fallback(a[, b])`.";
    ufuncOpType.tp_new = ufuncOpNew;
    ufuncOpType.tp_dealloc = ufuncOpDealloc;
    ufuncOpType.tp_traverse = ufuncOpTraverse;
    ufuncOpType.tp_clear = ufuncOpClear;
    ufuncOpType.tp_call = PyVectorcall_Call;
    ufuncOpType.tp_vectorcall_offset = offsetof(UfuncOp, vectorcall);
    ufuncOpType.tp_descr_get = ufuncOpGet;
    ufuncOpType.tp_getset = ufuncOpGetset;
    ufuncOpType.tp_members = ufuncOpMembers;
    if (PyType_Ready(&ufuncOpType) < 0) return nullptr;
    ready = true;
  }
  Py_INCREF(&ufuncOpType);
  return reinterpret_cast<PyObject*>(&ufuncOpType);
}

}  // namespace npudist::xp
