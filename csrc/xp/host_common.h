#pragma once
// What xp's two C fast paths share (host_ufunc.cpp, host_func.cpp): NumPy's C API (one table,
// defined in host_ufunc.cpp), dtype mapping, zero-copy NumPy views of npu tensors, interned names.
#include <Python.h>

#include "xp/python_names.h"

#define NPY_NO_DEPRECATED_API NPY_2_0_API_VERSION
#define PY_ARRAY_UNIQUE_SYMBOL npudist_xp_host_ARRAY_API
#ifndef XP_HOST_DEFINE_ARRAY_API
#define NO_IMPORT_ARRAY
#endif
#include <numpy/arrayobject.h>
#include <structmember.h>

#include <ATen/core/Tensor.h>

#include <array>
#include <cstddef>
#include <tuple>

namespace npudist::xp::host {

// The Python references a fast-path object owns, listed once by the object (its `owned()`: an
// std::array of PyObject** fields) for its constructor, tp_traverse and tp_clear.
template <class Self, size_t N>
void setOwned(Self* self, PyObject* const (&values)[N]) {
  auto fields = self->owned();
  static_assert(N == std::tuple_size<decltype(fields)>::value, "one value per owned field");
  for (size_t i = 0; i < N; ++i) {
    Py_INCREF(values[i]);
    *fields[i] = values[i];
  }
}

template <class Self>
int traverseOwned(PyObject* o, visitproc visit, void* arg) {
  for (PyObject** f : reinterpret_cast<Self*>(o)->owned()) Py_VISIT(*f);
  return 0;
}

template <class Self>
int clearOwned(PyObject* o) {
  for (PyObject** f : reinterpret_cast<Self*>(o)->owned()) Py_CLEAR(*f);
  return 0;
}

// NumPy type number of a torch dtype, -1 if NumPy has none (bfloat16, ...).
inline int npyType(c10::ScalarType s) {
  switch (s) {
    case c10::ScalarType::Bool:
      return NPY_BOOL;
    case c10::ScalarType::Byte:
      return NPY_UINT8;
    case c10::ScalarType::Char:
      return NPY_INT8;
    case c10::ScalarType::Short:
      return NPY_INT16;
    case c10::ScalarType::Int:
      return NPY_INT32;
    case c10::ScalarType::Long:
      return NPY_INT64;
    case c10::ScalarType::UInt16:
      return NPY_UINT16;
    case c10::ScalarType::UInt32:
      return NPY_UINT32;
    case c10::ScalarType::UInt64:
      return NPY_UINT64;
    case c10::ScalarType::Half:
      return NPY_FLOAT16;
    case c10::ScalarType::Float:
      return NPY_FLOAT32;
    case c10::ScalarType::Double:
      return NPY_FLOAT64;
    case c10::ScalarType::ComplexFloat:
      return NPY_COMPLEX64;
    case c10::ScalarType::ComplexDouble:
      return NPY_COMPLEX128;
    default:
      return -1;
  }
}

inline bool isUnsigned(c10::ScalarType s) {
  return s == c10::ScalarType::UInt16 || s == c10::ScalarType::UInt32 || s == c10::ScalarType::UInt64;
}

// constants set by initCommon() (the names read from Python objects: python_names.h)
inline PyObject *s_off = nullptr, *s_out_kw = nullptr, *s_empty = nullptr;

// The C-contiguous NumPy view of npu tensor t (type number npy); new reference, nullptr with an error set.
inline PyObject* npView(const at::Tensor& t, int npy) {
  npy_intp dims[NPY_MAXDIMS];
  const int nd = int(t.dim());
  for (int i = 0; i < nd; ++i) dims[i] = npy_intp(t.size(i));
  PyArray_Descr* d = PyArray_DescrFromType(npy);  // new reference, stolen below
  if (!d) return nullptr;
  return PyArray_NewFromDescr(&PyArray_Type, d, nd, dims, nullptr, t.data_ptr(), NPY_ARRAY_CARRAY, nullptr);
}

// The byte offset of `name`'s slot (a __slots__ member holding an object) in instances of `type`;
// -1 with a TypeError set if `type` has no such slot. The fast paths read and write xp.ndarray's
// `_t` there instead of through getattr/setattr (~200 instructions each).
inline Py_ssize_t slotOffset(PyTypeObject* type, PyObject* name) {
  PyObject* d = _PyType_Lookup(type, name);  // borrowed
  if (d && Py_TYPE(d) == &PyMemberDescr_Type) {
    PyMemberDef* m = reinterpret_cast<PyMemberDescrObject*>(d)->d_member;
    if (m->type == T_OBJECT_EX && !(m->flags & READONLY)) return m->offset;
  }
  PyErr_Format(PyExc_TypeError, "%s has no object slot %R (xp's fast paths need ArrayBase's __slots__)", type->tp_name,
               name);
  return -1;
}

// A new xp array of exact class `type` over tensor object `t` (reference stolen), `t` in the
// slot at `t_offset`; what `object.__new__(ndarray); r._t = t` does. New reference, nullptr with an error set.
inline PyObject* newArray(PyTypeObject* type, Py_ssize_t t_offset, PyObject* t) {
  PyObject* a = type->tp_alloc(type, 0);
  if (!a) {
    Py_DECREF(t);
    return nullptr;
  }
  *reinterpret_cast<PyObject**>(reinterpret_cast<char*>(a) + t_offset) = t;
  return a;
}

// A fast path's answer: not this call (xp's general path runs).
inline PyObject* declined() { Py_RETURN_NONE; }

// NumPy's data-memory handler taking buffers from the npu caching allocator (host_memory.cpp):
// Begin installs it for the current context and returns the previous handler (new reference;
// nullptr with an error set), End restores that handler (stealing the reference; keeps any error).
PyObject* npuMemoryBegin();
void npuMemoryEnd(PyObject* previous);
// A tensor over NumPy array `arr`'s data (dtype st; arr's shape and strides) when that data lies in a
// buffer the npu handler allocated and still owns (through arr's base arrays); undefined otherwise.
at::Tensor adoptNpuMemory(PyArrayObject* arr, c10::ScalarType st);

// NumPy's C API and the interned names; false with a Python error set on failure.
bool initCommon();  // defined in host_ufunc.cpp, which holds NumPy's C API table

}  // namespace npudist::xp::host
