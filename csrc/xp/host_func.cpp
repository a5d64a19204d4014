// npudist.xp's NumPy-function path: an xp function (sum, sort, where, astype, ...) runs NumPy's own
// function on zero-copy views of its npu arrays in one C call. Above the small size NumPy allocates
// through the npu data-memory handler (host_memory.cpp), so a dense result already lies in npu memory
// and is handed over as the xp result without a copy; a small result (malloc and a copy are cheaper),
// or one NumPy made otherwise, is copied into new npu memory. For anything unusual the object
// calls xp's own function (its fallback) with the same arguments, or with no fallback (the probe,
// ``f._host_fast``) returns None. The object is the decorated function itself: it has a __dict__
// (functools.update_wrapper's name, doc and __wrapped__) and binds as a method, so no Python frame
// sits between the caller and this C call. See npudist/xp/_host.py numpy_first.
#include "xp/host_ufunc.h"

#include "xp/host_common.h"

#include <ATen/Parallel.h>
#include <torch/csrc/DynamicTypes.h>
#include <torch/csrc/Exceptions.h>
#include <torch/csrc/autograd/python_variable.h>

#include <structmember.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "core/aten/native_ops.h"
#include "core/device.h"
#include "core/graph/capture_state.h"
#include "core/stream.h"

namespace npudist::xp {

using namespace ::npudist::core;  // the device core's API (streams, capture, allocation) below this layer
namespace {

using namespace host;

// When a call sets NumPy's FP-error state to 'ignore' (its context variable; ~0.15 us a call):
// always; never (functions that only move, compare or index data); or unless every array argument
// is integer/bool and every other argument None, a bool, an int or a tuple of ints (integer sums,
// maxima, cumulative sums: NumPy's integer loops raise no FP errors, and no dtype= or float
// argument can bring a cast or a float loop in).
enum { FP_NEVER = 0, FP_ALWAYS = 1, FP_IF_FLOAT = 2 };

struct HostFunc {
  PyObject_HEAD vectorcallfunc vectorcall;
  PyObject* np_fn;       // e.g. numpy.sum
  PyObject* array_type;  // xp.ndarray
  PyObject* uint_type;
  PyObject* as_uint;
  PyObject* host_dict;
  PyObject* state;
  PyObject* errvar;
  PyObject* ignore;
  PyObject* fallback;  // xp's own function (None: decline with None)
  PyObject* dict;      // __dict__ (functools.update_wrapper's attributes)
  int big_ok;          // 1: NumPy's function at any size with one torch thread (measured faster);
                       // 2: at any size always (its results are what xp must match, e.g. cumsum's order)
  bool uint_ok;        // NumPy's function at any size when an array is uint16/32/64 (xp emulates those)
  int fp;              // FP_ALWAYS / FP_NEVER / FP_IF_FLOAT: when NumPy's FP errors are ignored for the call
  // byte offsets of array_type's `_t` and `_h` slots (read without attribute lookups or, for an
  // unset `_h`, an AttributeError); -1 until array_type is resolved or when they are not slots
  Py_ssize_t t_off, h_off;

  std::array<PyObject**, 9> owned() {
    return {&np_fn, &array_type, &uint_type, &as_uint, &host_dict, &state, &errvar, &ignore, &fallback};
  }
};

c10::ScalarType fromNpy(int t) {
  switch (t) {
    case NPY_BOOL:
      return c10::ScalarType::Bool;
    case NPY_UINT8:
      return c10::ScalarType::Byte;
    case NPY_INT8:
      return c10::ScalarType::Char;
    case NPY_INT16:
      return c10::ScalarType::Short;
    case NPY_INT32:
      return c10::ScalarType::Int;
    case NPY_UINT16:
      return c10::ScalarType::UInt16;
    case NPY_UINT32:
      return c10::ScalarType::UInt32;
    case NPY_FLOAT16:
      return c10::ScalarType::Half;
    case NPY_FLOAT32:
      return c10::ScalarType::Float;
    case NPY_FLOAT64:
      return c10::ScalarType::Double;
    case NPY_COMPLEX64:
      return c10::ScalarType::ComplexFloat;
    case NPY_COMPLEX128:
      return c10::ScalarType::ComplexDouble;
    default:
      break;
  }
  // the 64-bit integers have two type numbers each on LP64 (long, long long)
  if (t == NPY_LONG || t == NPY_LONGLONG) return c10::ScalarType::Long;
  if (t == NPY_ULONG || t == NPY_ULONGLONG) return c10::ScalarType::UInt64;
  return c10::ScalarType::Undefined;
}

// Slot value of o at off (new reference; nullptr without an error when unset), or attribute `name`.
PyObject* getSlot(PyObject* o, Py_ssize_t off, PyObject* name) {
  if (off >= 0) return Py_XNewRef(*reinterpret_cast<PyObject**>(reinterpret_cast<char*>(o) + off));
  PyObject* v = PyObject_GetAttr(o, name);
  if (!v) PyErr_Clear();
  return v;
}

// None, a bool, an int, a float, a str, a class (np.float32) or a NumPy dtype: an argument that is
// no array of any kind.
bool isPlainValue(PyObject* o) {
  return o == Py_None || PyLong_CheckExact(o) || PyBool_Check(o) || PyFloat_CheckExact(o) || PyUnicode_CheckExact(o) ||
         PyType_CheckExact(o) || PyArray_DescrCheck(o);
}

// None, a bool, an int or a tuple of ints (an axis, keepdims, ddof, ...): FP_IF_FLOAT's other arguments.
bool isIntegerParam(PyObject* o) {
  if (o == Py_None || PyLong_CheckExact(o) || PyBool_Check(o)) return true;
  if (!PyTuple_CheckExact(o)) return false;
  for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(o); ++i)
    if (!PyLong_CheckExact(PyTuple_GET_ITEM(o, i))) return false;
  return true;
}

// The view cached on xp array o (its `_h`, npudist.xp._host.host_view's layout: (tensor, address, view,
// plain tensor, device index, torch dtype)) when it is still a view of tensor object t as it is now (same
// object, address, type, shape and strides); new reference, or nullptr (no error) when there is none.
PyObject* cachedView(PyObject* o, Py_ssize_t h_off, PyObject* t, const at::Tensor& ten, int npy, int nd,
                     const npy_intp* dims, const npy_intp* strides) {
  PyObject* h = getSlot(o, h_off, s_h);
  if (!h) return nullptr;
  PyObject* v = nullptr;
  if (PyTuple_CheckExact(h) && PyTuple_GET_SIZE(h) == 6 && PyTuple_GET_ITEM(h, 0) == t &&
      PyArray_CheckExact(PyTuple_GET_ITEM(h, 2))) {
    auto* a = reinterpret_cast<PyArrayObject*>(PyTuple_GET_ITEM(h, 2));
    bool same =
        PyArray_DATA(a) == ten.data_ptr() && PyArray_NDIM(a) == nd && PyArray_TYPE(a) == npy && PyArray_ISWRITEABLE(a);
    for (int i = 0; same && i < nd; ++i) same = PyArray_DIMS(a)[i] == dims[i] && PyArray_STRIDES(a)[i] == strides[i];
    if (same) v = Py_NewRef(reinterpret_cast<PyObject*>(a));
  }
  Py_DECREF(h);
  return v;
}

// Caches view v of C-contiguous tensor object t on xp array o as its `_h` (the Python host path and the
// ufunc fast path read it too); failures are ignored (the cache is an optimisation).
void cacheView(PyObject* o, Py_ssize_t h_off, PyObject* t, const at::Tensor& ten, PyObject* v) {
  PyObject* h = PyTuple_New(6);
  PyObject* ptr = PyLong_FromVoidPtr(ten.data_ptr());
  PyObject* dev = PyLong_FromLong(long(ten.device().index()));
  if (h && ptr && dev) {
    PyTuple_SET_ITEM(h, 0, Py_NewRef(t));
    PyTuple_SET_ITEM(h, 1, ptr);
    PyTuple_SET_ITEM(h, 2, Py_NewRef(v));
    PyTuple_SET_ITEM(h, 3, Py_NewRef(t));  // (a UIntTensor stands for its plain tensor: same buffer)
    PyTuple_SET_ITEM(h, 4, dev);
    PyTuple_SET_ITEM(h, 5, Py_NewRef(reinterpret_cast<PyObject*>(torch::getTHPDtype(ten.scalar_type()))));
    if (h_off >= 0) {
      Py_XSETREF(*reinterpret_cast<PyObject**>(reinterpret_cast<char*>(o) + h_off), Py_NewRef(h));
    } else if (PyObject_SetAttr(o, s_h, h) < 0) {
      PyErr_Clear();
    }
  } else {
    Py_XDECREF(ptr);
    Py_XDECREF(dev);
    PyErr_Clear();
  }
  Py_XDECREF(h);
}

// The zero-copy NumPy view of an exact xp array (nullptr, no error: not viewable). *numel: its size.
PyObject* viewOf(HostFunc* self, PyObject* o, c10::Device* dev, int64_t* numel, bool* unsig, bool* floating) {
  PyObject* uint_type = self->uint_type;
  PyObject* t = getSlot(o, self->t_off, s_t);
  if (!t) return nullptr;
  PyTypeObject* tt = Py_TYPE(t);
  PyObject* v = nullptr;
  if (tt == (PyTypeObject*)THPVariableClass || tt == (PyTypeObject*)uint_type) {
    const at::Tensor& ten = THPVariable_Unpack(t);
    const int npy = ten.defined() ? npyType(ten.scalar_type()) : -1;
    if (npy >= 0 && ten.is_privateuseone() && ten.numel() > 0 && ten.dim() <= NPY_MAXDIMS && !ten.is_conj() &&
        !ten.is_neg() && !ten.requires_grad() && (dev->index() < 0 || ten.device() == *dev)) {
      *dev = ten.device();
      *numel = std::max<int64_t>(*numel, ten.numel());
      *unsig = *unsig || isUnsigned(ten.scalar_type());
      *floating = *floating || c10::isFloatingType(ten.scalar_type()) || c10::isComplexType(ten.scalar_type());
      // any strides (a transposed or sliced array is a strided NumPy view of the same buffer)
      npy_intp dims[NPY_MAXDIMS], strides[NPY_MAXDIMS];
      const int nd = int(ten.dim());
      for (int i = 0; i < nd; ++i) {
        dims[i] = npy_intp(ten.size(i));
        strides[i] = npy_intp(ten.stride(i) * ten.element_size());
      }
      v = cachedView(o, self->h_off, t, ten, npy, nd, dims, strides);
      if (!v) {
        PyArray_Descr* d = PyArray_DescrFromType(npy);
        v = d ? PyArray_NewFromDescr(&PyArray_Type, d, nd, dims, strides, ten.data_ptr(), NPY_ARRAY_WRITEABLE, nullptr)
              : nullptr;
        if (v && ten.is_contiguous()) cacheView(o, self->h_off, t, ten, v);
        if (!v) PyErr_Clear();
      }
    }
  }
  Py_DECREF(t);
  return v;
}

// Tensor t (dtype st, fresh: no Python object yet) as a new xp array; nullptr with an error set on
// failure. An unsigned tensor is wrapped straight into xp's UIntTensor class: no alias tensor (as
// ``as_subclass`` makes) to create and free, and, owning its memory, it has no ``_base``.
PyObject* wrapTensor(HostFunc* self, at::Tensor t, c10::ScalarType st) {
  PyObject* tobj = isUnsigned(st) ? THPVariable_Wrap(t, reinterpret_cast<PyTypeObject*>(self->uint_type))
                                  : THPVariable_Wrap(std::move(t));
  if (!tobj) return nullptr;
  if (self->t_off >= 0) return newArray((PyTypeObject*)self->array_type, self->t_off, tobj);  // steals tobj
  PyObject* out = PyBaseObject_Type.tp_new((PyTypeObject*)self->array_type, s_empty, nullptr);
  if (out && PyObject_SetAttr(out, s_t, tobj) < 0) Py_CLEAR(out);
  Py_DECREF(tobj);
  return out;
}

// Whether a's elements fill one segment of memory in some axis order, every stride positive (C, F,
// or NumPy's order='K' result of transposed operands): such a result keeps its strides when copied.
bool isDense(PyArrayObject* a) {
  const int nd = PyArray_NDIM(a);
  npy_intp st[NPY_MAXDIMS], dim[NPY_MAXDIMS];
  int n = 0;
  for (int i = 0; i < nd; ++i) {
    if (PyArray_DIMS(a)[i] == 0) return true;
    if (PyArray_DIMS(a)[i] == 1) continue;
    if (PyArray_STRIDES(a)[i] <= 0) return false;
    st[n] = PyArray_STRIDES(a)[i];
    dim[n++] = PyArray_DIMS(a)[i];
  }
  npy_intp expect = PyArray_ITEMSIZE(a);
  for (int k = 0; k < n; ++k) {  // the smallest remaining stride must be the next segment size
    int m = -1;
    for (int i = 0; i < n; ++i)
      if (dim[i] > 0 && (m < 0 || st[i] < st[m])) m = i;
    if (st[m] != expect) return false;
    expect *= dim[m];
    dim[m] = 0;
  }
  return true;
}

// A NumPy result as a new xp array in npu memory (nullptr, no error: a result xp cannot hold).
// (adopt: the call ran with NumPy's npu memory handler installed, so its buffers may be npu memory)
PyObject* wrapResult(HostFunc* self, PyObject* r, c10::Device dev, bool adopt) {
  PyObject* arr = nullptr;
  if (PyArray_Check(r)) {
    auto* ra = reinterpret_cast<PyArrayObject*>(r);
    if (adopt && (PyArray_IS_C_CONTIGUOUS(ra) || PyArray_IS_F_CONTIGUOUS(ra)) && PyArray_ISALIGNED(ra) &&
        PyArray_ISNOTSWAPPED(ra)) {
      // NumPy allocated it through the npu handler (a big call, host_memory.cpp): it is npu memory
      // already, so it becomes the result's tensor without a copy
      const c10::ScalarType st = fromNpy(PyArray_TYPE(ra));
      if (st != c10::ScalarType::Undefined) {
        at::Tensor t = adoptNpuMemory(ra, st);
        if (t.defined()) return wrapTensor(self, std::move(t), st);
      }
    }
    if (PyArray_IS_C_CONTIGUOUS(ra) && PyArray_ISALIGNED(ra)) {
      Py_INCREF(r);  // the usual case: copied as it is
      arr = r;
    } else if ((PyArray_IS_F_CONTIGUOUS(ra) || isDense(ra)) && PyArray_ISALIGNED(ra) && PyArray_SIZE(ra) > 0) {
      Py_INCREF(r);  // NumPy's Fortran- or K-ordered result: copied as it is (memory order kept)
      arr = r;
    } else {
      arr = PyArray_FromAny(r, nullptr, 0, 0, NPY_ARRAY_C_CONTIGUOUS | NPY_ARRAY_ALIGNED, nullptr);
    }
  } else if (PyArray_IsScalar(r, Generic)) {
    // a NumPy scalar (a reduction's result): its value straight into a 0-d npu tensor
    PyArray_Descr* d = PyArray_DescrFromScalar(r);
    if (!d) {
      PyErr_Clear();
      return nullptr;
    }
    const c10::ScalarType st = fromNpy(d->type_num);
    const bool native = PyArray_ISNBO(d->byteorder);
    Py_DECREF(d);
    if (st == c10::ScalarType::Undefined || !native) return nullptr;
    at::Tensor t = empty_memory_format({}, st, std::nullopt, dev, std::nullopt, std::nullopt);
    PyArray_ScalarAsCtype(r, t.data_ptr());
    return wrapTensor(self, std::move(t), st);
  } else {
    return nullptr;
  }
  if (!arr) {
    PyErr_Clear();
    return nullptr;
  }
  auto* a = reinterpret_cast<PyArrayObject*>(arr);
  const c10::ScalarType st = fromNpy(PyArray_TYPE(a));
  if (st == c10::ScalarType::Undefined || !PyArray_ISNOTSWAPPED(a)) {
    Py_DECREF(arr);
    return nullptr;
  }
  const int nd = PyArray_NDIM(a);
  int64_t shape[NPY_MAXDIMS];
  for (int i = 0; i < nd; ++i) shape[i] = int64_t(PyArray_DIMS(a)[i]);
  at::Tensor t;
  if (PyArray_IS_C_CONTIGUOUS(a)) {
    t = empty_memory_format(c10::IntArrayRef(shape, size_t(nd)), st, std::nullopt, dev, std::nullopt, std::nullopt);
  } else {  // Fortran or another dense order: the same strides, one segment
    int64_t strides[NPY_MAXDIMS];
    for (int i = 0; i < nd; ++i) strides[i] = int64_t(PyArray_STRIDES(a)[i] / PyArray_ITEMSIZE(a));
    t = empty_strided(c10::IntArrayRef(shape, size_t(nd)), c10::IntArrayRef(strides, size_t(nd)), st, std::nullopt, dev,
                      std::nullopt);
  }
  if (t.numel() > 0) std::memcpy(t.data_ptr(), PyArray_DATA(a), size_t(t.nbytes()));
  Py_DECREF(arr);
  return wrapTensor(self, std::move(t), st);
}

// array_type given as a zero-argument callable (ndarray's own methods, decorated before the class
// exists): resolved once, at the first call. False with an error set when it is not a class.
bool resolveArrayType(HostFunc* self) {
  if (PyType_Check(self->array_type)) {
    auto* tp = reinterpret_cast<PyTypeObject*>(self->array_type);
    self->t_off = slotOffset(tp, s_t);  // (-1: not a slot, read by getattr then)
    self->h_off = slotOffset(tp, s_h);
    PyErr_Clear();
    return true;
  }
  PyObject* t = PyObject_CallNoArgs(self->array_type);
  if (!t) return false;
  if (!PyType_Check(t)) {
    Py_DECREF(t);
    PyErr_SetString(PyExc_TypeError, "_XpHostFunc: array_type() must return a class");
    return false;
  }
  Py_SETREF(self->array_type, t);
  return resolveArrayType(self);
}

// The NumPy path: the result, or declined() (None) when the call does not qualify.
PyObject* tryNumpy(HostFunc* self, PyObject* const* args, size_t nargsf, PyObject* kwnames) {
  HANDLE_TH_ERRORS
  const Py_ssize_t n = PyVectorcall_NARGS(nargsf);
  const Py_ssize_t nkw = kwnames ? PyTuple_GET_SIZE(kwnames) : 0;
  if (n == 0 || graph::anyCapture() || isInBadFork()) return declined();
  if (C10_UNLIKELY(!PyType_Check(self->array_type)) && !resolveArrayType(self)) return nullptr;
  {
    PyObject* e = PyDict_GetItemWithError(self->host_dict, s_ENABLED);
    if (e != Py_True || PyDict_GetItemWithError(self->host_dict, s_FAST) != Py_True)
      return PyErr_Occurred() ? nullptr : declined();
    PyObject* mode = PyObject_GetAttr(self->state, s_float64_mode);
    if (!mode) return nullptr;
    const bool off = mode == s_off || (PyUnicode_Check(mode) && PyUnicode_Compare(mode, s_off) == 0);
    Py_DECREF(mode);
    if (!off) return declined();
  }
  Py_ssize_t small = 0;
  {
    PyObject* s = PyDict_GetItemWithError(self->host_dict, s_SMALL);
    if (!s || !PyLong_Check(s)) return PyErr_Occurred() ? nullptr : declined();
    small = PyLong_AsSsize_t(s);
  }
  const Py_ssize_t total = n + nkw;
  // the call's arguments with views for arrays (a stack buffer for the usual few)
  PyObject* stack_args[8];
  std::vector<PyObject*> heap_args;
  PyObject** cargs = stack_args;
  if (total > 8) {
    heap_args.resize(size_t(total));
    cargs = heap_args.data();
  }
  std::fill(cargs, cargs + total, nullptr);
  struct Release {  // the views and argument references, released on every exit
    PyObject** p;
    Py_ssize_t n;
    ~Release() {
      for (Py_ssize_t i = 0; i < n; ++i) Py_XDECREF(p[i]);
    }
  } release{cargs, total};
  c10::Device dev(c10::DeviceType::PrivateUse1, -1);
  int64_t numel = 0;
  bool unsig = false, ok = true, any_array = false, floating = false, plain_params = true;
  for (Py_ssize_t i = 0; i < total && ok; ++i) {
    PyObject* o = args[i];
    PyTypeObject* tp = Py_TYPE(o);
    if (tp == (PyTypeObject*)self->array_type) {
      cargs[i] = viewOf(self, o, &dev, &numel, &unsig, &floating);
      ok = cargs[i] != nullptr;
      any_array = true;
    } else if (i >= n && o != Py_None &&
               PyUnicode_CompareWithASCIIString(PyTuple_GET_ITEM(kwnames, i - n), "out") == 0) {
      ok = false;  // out=: the general path
    } else if (isPlainValue(o)) {
      // an axis, a kind, a dtype, ...: passed as it is (no isinstance check against torch.Tensor,
      // whose metaclass's __instancecheck__ is Python code, ~0.1 us a call)
      if (plain_params && self->fp == FP_IF_FLOAT) plain_params = isIntegerParam(o);
      cargs[i] = Py_NewRef(o);
    } else if (THPVariable_Check(o) || PyArray_Check(o)) {
      ok = false;  // torch tensors and NumPy arrays: the general path
    } else {
      if (PyObject_TypeCheck(o, (PyTypeObject*)self->array_type)) ok = false;  // an xp subclass
      if (plain_params && self->fp == FP_IF_FLOAT) plain_params = isIntegerParam(o);
      cargs[i] = o;
      Py_INCREF(o);
    }
  }
  PyObject* res = nullptr;
  bool adopt = false;
  if (ok && any_array &&
      (numel <= small || (unsig && self->uint_ok) || self->big_ok == 2 ||
       (self->big_ok && at::get_num_threads() == 1))) {
    if (C10_UNLIKELY(currentStreamHasPending(dev.index()))) {
      PyThreadState* ts = PyEval_SaveThread();
      try {
        waitCurrentStream(dev.index());
      } catch (...) {
        PyEval_RestoreThread(ts);
        throw;
      }
      PyEval_RestoreThread(ts);
    }
    // A big call: NumPy allocates its buffers from the npu caching allocator (host_memory.cpp),
    // so its result needs no copy into npu memory. (Small ones: malloc and a copy are cheaper.)
    c10::OptionalDeviceGuard guard;
    PyObject* previous = nullptr;
    if (numel > small) {
      if (dev.index() != currentDevice()) guard.reset_device(dev);
      previous = npuMemoryBegin();
      if (!previous) return nullptr;
    }
    if (self->fp == FP_NEVER || (self->fp == FP_IF_FLOAT && !floating && plain_params)) {
      res = PyObject_Vectorcall(self->np_fn, cargs, size_t(n), kwnames);
    } else if (PyObject* token = PyContextVar_Set(self->errvar, self->ignore)) {
      res = PyObject_Vectorcall(self->np_fn, cargs, size_t(n), kwnames);
      PyObject *et, *ev, *tb;
      PyErr_Fetch(&et, &ev, &tb);
      if (PyContextVar_Reset(self->errvar, token) < 0) PyErr_Clear();
      PyErr_Restore(et, ev, tb);
      Py_DECREF(token);
    }
    if (previous) npuMemoryEnd(previous);
    adopt = previous != nullptr;
    if (!res) {
      if (PyErr_ExceptionMatches(PyExc_TypeError) || PyErr_ExceptionMatches(PyExc_ValueError) ||
          PyErr_ExceptionMatches(PyExc_OverflowError) || PyErr_ExceptionMatches(PyExc_IndexError) ||
          PyErr_ExceptionMatches(PyExc_MemoryError)) {
        // NumPy refused: the general path raises xp's error (MemoryError: the npu memory NumPy's
        // handler asked for was not there; xp's path then raises torch.OutOfMemoryError as any op)
        PyErr_Clear();
      } else {
        return nullptr;
      }
    }
  }
  if (res) {
    // NumPy returned into one of our views (an out array passed positionally): the xp function
    // must return the caller's array, so it runs itself
    for (Py_ssize_t i = 0; i < total; ++i)
      if (cargs[i] && res == cargs[i]) Py_CLEAR(res);
  }
  if (!res) return declined();
  PyObject* out = nullptr;
  if (PyTuple_Check(res)) {
    // several arrays (unique(return_counts=True), histogram): each wrapped, or decline all
    const Py_ssize_t m = PyTuple_GET_SIZE(res);
    out = PyTuple_New(m);
    for (Py_ssize_t k = 0; out && k < m; ++k) {
      PyObject* w = wrapResult(self, PyTuple_GET_ITEM(res, k), dev, adopt);
      if (!w) {
        Py_CLEAR(out);
        break;
      }
      PyTuple_SET_ITEM(out, k, w);
    }
    if (out && Py_TYPE(res) != &PyTuple_Type) {  // a named tuple (NumPy's unique_all, ...): same class
      PyObject* named = PyObject_Call((PyObject*)Py_TYPE(res), out, nullptr);
      Py_DECREF(out);
      out = named;
      if (!out) PyErr_Clear();
    }
  } else {
    out = wrapResult(self, res, dev, adopt);
  }
  Py_DECREF(res);
  if (!out) {
    if (PyErr_Occurred()) return nullptr;
    return declined();
  }
  return out;
  END_HANDLE_TH_ERRORS
}

PyObject* funcCall(PyObject* callable, PyObject* const* args, size_t nargsf, PyObject* kwnames) {
  auto* self = reinterpret_cast<HostFunc*>(callable);
  PyObject* r = tryNumpy(self, args, nargsf, kwnames);
  if (r != Py_None || self->fallback == Py_None) return r;
  Py_DECREF(r);
  return PyObject_Vectorcall(self->fallback, args, nargsf, kwnames);  // xp's own function
}

// Binding as a method (ndarray.astype): the object is the function, so it binds as functions do.
PyObject* hostFuncGet(PyObject* self, PyObject* obj, PyObject* /*type*/) {
  if (obj == nullptr || obj == Py_None) return Py_NewRef(self);
  return PyMethod_New(self, obj);
}

// repr and pickling as the function it stands for (its __module__ / __qualname__ from update_wrapper)
PyObject* hostFuncRepr(PyObject* self) {
  PyObject* q = PyObject_GetAttr(self, s_qualname);
  if (!q) {
    PyErr_Clear();
    return PyUnicode_FromFormat("<npudist._C._XpHostFunc object at %p>", self);
  }
  PyObject* r = PyUnicode_FromFormat("<function %S (NumPy first) at %p>", q, self);
  Py_DECREF(q);
  return r;
}

PyObject* hostFuncReduce(PyObject* self, PyObject* /*unused*/) {
  return PyObject_GetAttr(self, s_qualname);  // pickled by reference, as functions are
}

PyMethodDef hostFuncMethods[] = {{"__reduce__", hostFuncReduce, METH_NOARGS, nullptr}, {nullptr, nullptr, 0, nullptr}};

PyGetSetDef hostFuncGetset[] = {{"__dict__", PyObject_GenericGetDict, PyObject_GenericSetDict, nullptr, nullptr},
                                {nullptr, nullptr, nullptr, nullptr, nullptr}};

PyObject* hostFuncNew(PyTypeObject* type, PyObject* args, PyObject* kwargs) {
  PyObject *np_fn, *array_type, *uint_type, *as_uint, *host_dict, *state, *errvar, *ignore, *fallback = Py_None;
  int big_ok, uint_ok, fp = FP_ALWAYS;
  if (!PyArg_ParseTuple(args, "OipOOOO!OOO|Oi:_XpHostFunc", &np_fn, &big_ok, &uint_ok, &array_type, &uint_type,
                        &as_uint, &PyDict_Type, &host_dict, &state, &errvar, &ignore, &fallback, &fp))
    return nullptr;
  if (!(PyType_Check(array_type) || PyCallable_Check(array_type)) || !PyType_Check(uint_type) ||
      !PyContextVar_CheckExact(errvar) || !(fallback == Py_None || PyCallable_Check(fallback))) {
    PyErr_SetString(PyExc_TypeError,
                    "_XpHostFunc: array_type must be a class (or a callable returning it), uint_type a class, "
                    "errvar a contextvars.ContextVar and fallback a callable or None");
    return nullptr;
  }
  if (fp != FP_NEVER && fp != FP_ALWAYS && fp != FP_IF_FLOAT) {
    PyErr_SetString(PyExc_ValueError, "_XpHostFunc: fp must be 0 (never), 1 (always) or 2 (if float)");
    return nullptr;
  }
  auto* self = reinterpret_cast<HostFunc*>(type->tp_alloc(type, 0));
  if (!self) return nullptr;
  self->vectorcall = funcCall;
  setOwned(self, {np_fn, array_type, uint_type, as_uint, host_dict, state, errvar, ignore, fallback});
  self->dict = nullptr;
  self->t_off = self->h_off = -1;
  if (PyType_Check(array_type)) resolveArrayType(self);
  if (big_ok < 0 || big_ok > 2) {
    PyErr_SetString(PyExc_ValueError, "_XpHostFunc: big_ok must be 0, 1 (one torch thread) or 2 (always)");
    Py_DECREF(self);
    return nullptr;
  }
  self->big_ok = big_ok;
  self->uint_ok = uint_ok != 0;
  self->fp = fp;
  return reinterpret_cast<PyObject*>(self);
}

int hostFuncTraverse(PyObject* o, visitproc visit, void* arg) {
  Py_VISIT(reinterpret_cast<HostFunc*>(o)->dict);
  return traverseOwned<HostFunc>(o, visit, arg);
}

int hostFuncClear(PyObject* o) {
  Py_CLEAR(reinterpret_cast<HostFunc*>(o)->dict);
  return clearOwned<HostFunc>(o);
}

void hostFuncDealloc(PyObject* o) {
  PyObject_GC_UnTrack(o);
  hostFuncClear(o);
  Py_TYPE(o)->tp_free(o);
}

PyTypeObject hostFuncType = {PyVarObject_HEAD_INIT(nullptr, 0) "npudist._C._XpHostFunc"};

}  // namespace

PyObject* hostFuncTypeObject() {
  static bool ready = false;
  if (!ready) {
    if (!initCommon()) return nullptr;
    hostFuncType.tp_basicsize = sizeof(HostFunc);
    hostFuncType.tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL;
    hostFuncType.tp_doc =
        "_XpHostFunc(np_fn, big_ok, uint_ok, array_type, uint_type, as_uint, host_dict, state, errvar, ignore, "
        "fallback=None, fp=1)\n\n"
        "npudist.xp's host path for a NumPy function: calling it with the xp function's arguments runs np_fn "
        "with exact xp arrays replaced by zero-copy views of their npu buffers and returns its results as xp arrays "
        "in npu memory (above the small size NumPy allocates them there, and they are handed over without a copy; "
        "smaller results are copied); when the call does not qualify it returns fallback(*args, **kwargs) "
        "(xp's own function), or None if fallback is None. fp: when NumPy's FP errors are ignored for the call "
        "(through errvar): 1 always, 0 never (data movement), 2 unless every array is integer/bool and every "
        "other argument None/bool/int/tuple of ints. Binds as a method; has a __dict__.";
    hostFuncType.tp_new = hostFuncNew;
    hostFuncType.tp_dealloc = hostFuncDealloc;
    hostFuncType.tp_traverse = hostFuncTraverse;
    hostFuncType.tp_clear = hostFuncClear;
    hostFuncType.tp_call = PyVectorcall_Call;
    hostFuncType.tp_descr_get = hostFuncGet;
    hostFuncType.tp_getset = hostFuncGetset;
    hostFuncType.tp_methods = hostFuncMethods;
    hostFuncType.tp_repr = hostFuncRepr;
    hostFuncType.tp_dictoffset = offsetof(HostFunc, dict);
    hostFuncType.tp_vectorcall_offset = offsetof(HostFunc, vectorcall);
    if (PyType_Ready(&hostFuncType) < 0) return nullptr;
    ready = true;
  }
  Py_INCREF(&hostFuncType);
  return reinterpret_cast<PyObject*>(&hostFuncType);
}

}  // namespace npudist::xp
