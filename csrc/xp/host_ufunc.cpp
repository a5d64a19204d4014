// npudist.xp's ufunc fast path (the NumPy-function path is host_func.cpp): one C call from xp's ufunc
// __call__ that checks the operands, finds NumPy's loop (cached), allocates the
// npu result through the npu caching allocator, runs NumPy's own ufunc on
// zero-copy views of the npu buffers and wraps the result as an xp array.
// It declines (returns None, the Python paths then run) for anything unusual:
// a non-npu / non-contiguous / conjugate-view / subclass tensor, operands of
// different shapes or devices, operand types other than exact xp arrays and
// Python scalars, NumPy refusing the call, float64 modes other than 'off', the
// host loops turned off (npudist.xp._host.ENABLED / FAST), or a graph capture under way.
// Why C: the same steps in Python cost ~5 us per call, NumPy's whole call ~0.4 us.
#include "xp/host_ufunc.h"

#define XP_HOST_DEFINE_ARRAY_API  // this translation unit holds NumPy's C API table (host_common.h)
#include "xp/host_common.h"
#include <numpy/ufuncobject.h>

#include <ATen/Parallel.h>
#include <torch/csrc/Dtype.h>
#include <torch/csrc/DynamicTypes.h>
#include <torch/csrc/Exceptions.h>
#include <torch/csrc/autograd/python_variable.h>

#include <algorithm>
#include <cfenv>
#include <cstring>
#include <unordered_map>
#include <vector>

#include "core/aten/native_ops.h"
#include "core/device.h"
#include "core/graph/capture_state.h"
#include "core/stream.h"

namespace npudist::xp {

using namespace ::npudist::core;  // the device core's API (streams, capture, allocation) below this layer
namespace {

using namespace host;

// Operand codes in the loop cache key: torch dtypes are < 0x80; Python scalar types above.
constexpr uint32_t kPyInt = 0x81, kPyFloat = 0x82, kPyComplex = 0x83, kPyBool = 0x84;

struct Loop {
  bool ok = false;  // false: NumPy has no loop (or xp refuses a dtype): always decline
  int nout = 0;
  c10::ScalarType in[3] = {c10::ScalarType::Undefined, c10::ScalarType::Undefined, c10::ScalarType::Undefined};
  c10::ScalarType out[2] = {c10::ScalarType::Undefined, c10::ScalarType::Undefined};
  bool any_unsigned = false;
  bool big = false;  // NumPy's loop measured faster at size with one torch thread, for these dtypes
  // NumPy's own 1-d inner loop for exactly these dtypes (the ufunc's legacy loop table), or null:
  // called directly when every operand already has its loop dtype (no cast), else NumPy's call runs
  PyUFuncGenericFunction fn = nullptr;
  void* fdata = nullptr;
};

struct HostUfunc {
  PyObject_HEAD vectorcallfunc vectorcall;
  PyObject* np_ufunc;    // numpy.<name>
  PyObject* resolve;     // resolve(key_tuple, None) -> loop tuple of torch dtypes (xp's _resolve)
  PyObject* array_type;  // xp.ndarray (exact type required)
  PyObject* uint_type;   // xp's UIntTensor (the tensor class of uint16/32/64 arrays)
  PyObject* as_uint;     // as_uint(tensor) -> tensor with the UIntTensor class
  PyObject* host_dict;   // npudist.xp._host.__dict__: ENABLED, SMALL read per call
  PyObject* state;       // npudist.xp._config.state: float64_mode read per call
  PyObject* errvar;      // NumPy's FP-error context variable
  PyObject* ignore;      // its value with all errors ignored
  int nin;
  int nout;
  // NumPy's loop wins at size with one torch thread (npudist.xp._host.NUMPY_FASTER): True / False,
  // or the torch dtypes of the first operand for which it does (npudist.xp._host.NUMPY_FASTER_FOR)
  PyObject* big;
  std::unordered_map<uint32_t, Loop>* loops;
  Py_ssize_t t_offset;  // byte offset of the `_t` slot in array_type's instances (its __slots__ member)
  Py_ssize_t h_offset;  // and of `_h`, the NumPy-view cache: () on results made here (built when needed)
  // enabled()'s last answer, reused while npudist.xp._host's globals are unchanged (dict version tag)
  // and float64_mode is the same object: four lookups and a string compare per call otherwise
  uint64_t host_version = 0;
  bool host_on = false;
  Py_ssize_t host_small = 0;
  PyObject* mode_seen = nullptr;  // strong reference
  Py_ssize_t mode_offset;         // float64_mode's slot in `state` (npudist.xp._config._State), or -1
  bool mode_off = false;

  std::array<PyObject**, 10> owned() {
    return {&np_ufunc, &resolve, &array_type, &uint_type, &as_uint, &host_dict, &state, &errvar, &ignore, &big};
  }
};

// A Python scalar as one element of loop dtype `st` in `buf`, where the value is exactly what NumPy's
// weak-scalar conversion gives (integers in range, floats to float32/64 by C's rounding, ints that
// convert exactly); false otherwise (then NumPy's own call runs and converts or refuses).
bool packScalar(PyObject* o, uint32_t code, c10::ScalarType st, char* buf) {
  long long iv = 0;
  double dv = 0, di = 0;
  bool is_int = false;
  if (code == kPyBool) {
    iv = o == Py_True;
    is_int = true;
  } else if (code == kPyInt) {
    int overflow = 0;
    iv = PyLong_AsLongLongAndOverflow(o, &overflow);
    if (overflow || (iv == -1 && PyErr_Occurred())) {
      PyErr_Clear();
      return false;
    }
    is_int = true;
  } else if (code == kPyFloat) {
    dv = PyFloat_AS_DOUBLE(o);
  } else if (code == kPyComplex) {
    dv = PyComplex_RealAsDouble(o);
    di = PyComplex_ImagAsDouble(o);
  } else {
    return false;
  }
  auto inRange = [&](long long lo, long long hi) { return is_int && iv >= lo && iv <= hi; };
  auto exactInFloat = [&](long long lim) { return iv >= -lim && iv <= lim; };
  switch (st) {
    case c10::ScalarType::Bool:
      if (code != kPyBool) return false;
      *reinterpret_cast<bool*>(buf) = iv != 0;
      return true;
#define XP_INT_CASE(ST, T, LO, HI)      \
  case c10::ScalarType::ST:             \
    if (!inRange(LO, HI)) return false; \
    *reinterpret_cast<T*>(buf) = T(iv); \
    return true;
      XP_INT_CASE(Char, int8_t, -128, 127)
      XP_INT_CASE(Byte, uint8_t, 0, 255)
      XP_INT_CASE(Short, int16_t, -32768, 32767)
      XP_INT_CASE(UInt16, uint16_t, 0, 65535)
      XP_INT_CASE(Int, int32_t, INT32_MIN, INT32_MAX)
      XP_INT_CASE(UInt32, uint32_t, 0, UINT32_MAX)
      XP_INT_CASE(Long, int64_t, INT64_MIN, INT64_MAX)
      XP_INT_CASE(UInt64, uint64_t, 0, INT64_MAX)
#undef XP_INT_CASE
    case c10::ScalarType::Float:
      if (code == kPyComplex || (is_int && !exactInFloat(1LL << 24))) return false;
      *reinterpret_cast<float*>(buf) = is_int ? float(iv) : float(dv);
      return true;
    case c10::ScalarType::Double:
      if (code == kPyComplex || (is_int && !exactInFloat(1LL << 53))) return false;
      *reinterpret_cast<double*>(buf) = is_int ? double(iv) : dv;
      return true;
    case c10::ScalarType::ComplexFloat:
      if (is_int && !exactInFloat(1LL << 24)) return false;
      reinterpret_cast<float*>(buf)[0] = is_int ? float(iv) : float(dv);
      reinterpret_cast<float*>(buf)[1] = float(di);
      return true;
    case c10::ScalarType::ComplexDouble:
      if (is_int && !exactInFloat(1LL << 53)) return false;
      reinterpret_cast<double*>(buf)[0] = is_int ? double(iv) : dv;
      reinterpret_cast<double*>(buf)[1] = di;
      return true;
    default:
      return false;  // float16: NumPy's own conversion
  }
}

// The loop for `key` (cached; on a miss xp's own resolver runs: NumPy's resolve_dtypes).
const Loop* findLoop(HostUfunc* self, uint32_t key, const uint32_t* codes, int n) {
  auto it = self->loops->find(key);
  if (it != self->loops->end()) return &it->second;
  Loop loop;
  PyObject* kt = PyTuple_New(n);
  if (!kt) return nullptr;
  for (int i = 0; i < n; ++i) {
    PyObject* item;
    switch (codes[i]) {
      case kPyInt:
        item = (PyObject*)&PyLong_Type;
        break;
      case kPyFloat:
        item = (PyObject*)&PyFloat_Type;
        break;
      case kPyComplex:
        item = (PyObject*)&PyComplex_Type;
        break;
      case kPyBool:
        item = (PyObject*)&PyBool_Type;
        break;
      default:
        item = (PyObject*)torch::getTHPDtype(c10::ScalarType(codes[i]));
    }
    Py_INCREF(item);
    PyTuple_SET_ITEM(kt, i, item);
  }
  PyObject* res = PyObject_CallFunctionObjArgs(self->resolve, kt, Py_None, nullptr);
  Py_DECREF(kt);
  if (!res) {
    // no loop, or a dtype xp refuses: the general path raises xp's error
    if (!PyErr_ExceptionMatches(PyExc_TypeError)) return nullptr;
    PyErr_Clear();
  } else if (PyTuple_Check(res) && PyTuple_GET_SIZE(res) == self->nin + self->nout && self->nout <= 2) {
    loop.ok = true;
    loop.nout = self->nout;
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(res); ++i) {
      PyObject* d = PyTuple_GET_ITEM(res, i);
      if (!THPDtype_Check(d)) {
        loop.ok = false;
        break;
      }
      const auto st = reinterpret_cast<THPDtype*>(d)->scalar_type;
      if (npyType(st) < 0) loop.ok = false;
      if (isUnsigned(st)) loop.any_unsigned = true;
      if (i >= self->nin)
        loop.out[i - self->nin] = st;
      else
        loop.in[i] = st;
    }
    if (loop.ok) {
      if (PyBool_Check(self->big)) {
        loop.big = self->big == Py_True;
      } else {
        const int has = PySequence_Contains(self->big, PyTuple_GET_ITEM(res, 0));
        if (has < 0) {
          Py_DECREF(res);
          return nullptr;
        }
        loop.big = has == 1;
      }
    }
    if (loop.ok && std::strcmp(Py_TYPE(self->np_ufunc)->tp_name, "numpy.ufunc") == 0) {
      auto* uf = reinterpret_cast<PyUFuncObject*>(self->np_ufunc);
      const int nargs = self->nin + self->nout;
      if (uf->nin == self->nin && uf->nout == self->nout && uf->core_enabled == 0 && uf->types && uf->functions) {
        for (int k = 0; k < uf->ntypes && !loop.fn; ++k) {
          bool match = true;
          for (int j = 0; j < nargs && match; ++j) {
            const c10::ScalarType st = j < self->nin ? loop.in[j] : loop.out[j - self->nin];
            match = int(uf->types[k * nargs + j]) == npyType(st);
          }
          if (match) {
            loop.fn = uf->functions[k];
            loop.fdata = uf->data ? uf->data[k] : nullptr;
          }
        }
      }
    }
  }
  Py_XDECREF(res);
  return &self->loops->emplace(key, loop).first->second;
}

// Host loops on and float64 mode 'off' (both settable from Python at any time).
bool enabled(HostUfunc* self, Py_ssize_t* small) {
#if PY_VERSION_HEX < 0x030C0000
  // (ma_version_tag changes with every change of the dict; deprecated from Python 3.12)
  const uint64_t version = reinterpret_cast<PyDictObject*>(self->host_dict)->ma_version_tag;
  const bool known = version == self->host_version && version != 0;
#else
  const bool known = false;
#endif
  if (!known) {
    self->host_on = false;
    PyObject* e = PyDict_GetItemWithError(self->host_dict, s_ENABLED);  // borrowed
    if (e != Py_True || PyDict_GetItemWithError(self->host_dict, s_FAST) != Py_True) return false;
    PyObject* s = PyDict_GetItemWithError(self->host_dict, s_SMALL);
    if (!s || !PyLong_Check(s)) return false;
    const Py_ssize_t n = PyLong_AsSsize_t(s);
    if (n == -1 && PyErr_Occurred()) return false;
    self->host_small = n;
    self->host_on = true;
#if PY_VERSION_HEX < 0x030C0000
    self->host_version = version;
#endif
  }
  if (!self->host_on) return false;
  *small = self->host_small;
  PyObject* mode = self->mode_offset >= 0
                       ? *reinterpret_cast<PyObject**>(reinterpret_cast<char*>(self->state) + self->mode_offset)
                       : nullptr;
  if (mode)
    Py_INCREF(mode);
  else
    mode = PyObject_GetAttr(self->state, s_float64_mode);  // (no slot, or unset: getattr raises)
  if (!mode) return false;
  if (mode != self->mode_seen) {
    const bool off = mode == s_off || (PyUnicode_Check(mode) && PyUnicode_Compare(mode, s_off) == 0);
    if (PyErr_Occurred()) PyErr_Clear();
    Py_INCREF(mode);
    Py_XSETREF(self->mode_seen, mode);
    self->mode_off = off;
  }
  Py_DECREF(mode);
  return self->mode_off;
}

PyObject* call(PyObject* callable, PyObject* const* args, size_t nargsf, PyObject* kwnames) {
  HANDLE_TH_ERRORS
  auto* self = reinterpret_cast<HostUfunc*>(callable);
  const Py_ssize_t n = PyVectorcall_NARGS(nargsf);
  if (kwnames || n != self->nin || n > 3) return declined();
  if (graph::anyCapture() || isInBadFork()) return declined();  // capture: torch records the op
  Py_ssize_t small = 0;
  if (!enabled(self, &small)) {
    if (PyErr_Occurred()) return nullptr;
    return declined();
  }

  // operands: exact xp arrays over plain (or xp's unsigned) contiguous npu tensors of one shape, or Python scalars
  PyObject* tobj[3] = {nullptr, nullptr, nullptr};
  uint32_t codes[3] = {0, 0, 0};
  const at::Tensor* first = nullptr;
  struct Holder {  // owns the `_t` references fetched below
    PyObject** p;
    ~Holder() {
      for (int i = 0; i < 3; ++i) Py_XDECREF(p[i]);
    }
  } holder{tobj};
  for (Py_ssize_t i = 0; i < n; ++i) {
    PyObject* o = args[i];
    PyTypeObject* tp = Py_TYPE(o);
    if (tp == (PyTypeObject*)self->array_type) {
      PyObject* t = *reinterpret_cast<PyObject**>(reinterpret_cast<char*>(o) + self->t_offset);
      if (!t) return declined();  // (an array whose `_t` was never set: the general path raises)
      Py_INCREF(t);
      tobj[i] = t;
      PyTypeObject* tt = Py_TYPE(t);
      if (tt != (PyTypeObject*)THPVariableClass && tt != (PyTypeObject*)self->uint_type) return declined();
      const at::Tensor& ten = THPVariable_Unpack(t);
      if (!ten.defined() || !ten.is_privateuseone() || !ten.is_contiguous() || ten.numel() == 0 || ten.is_conj() ||
          ten.is_neg() || ten.requires_grad() || npyType(ten.scalar_type()) < 0)
        return declined();
      if (first) {
        if (ten.device() != first->device() || ten.sizes() != first->sizes()) return declined();
      } else {
        first = &ten;
      }
      codes[i] = uint32_t(ten.scalar_type());
    } else if (tp == &PyBool_Type) {
      codes[i] = kPyBool;
    } else if (tp == &PyLong_Type) {
      codes[i] = kPyInt;
    } else if (tp == &PyFloat_Type) {
      codes[i] = kPyFloat;
    } else if (tp == &PyComplex_Type) {
      codes[i] = kPyComplex;
    } else {
      return declined();
    }
  }
  if (!first) return declined();
  const uint32_t key = codes[0] | (codes[1] << 8) | (codes[2] << 16);
  const Loop* loop = findLoop(self, key, codes, int(n));
  if (!loop) return nullptr;
  if (!loop->ok) return declined();

  // the measured choice (npudist.xp._host): small calls always; large ones for unsigned dtypes, or
  // the ufuncs whose NumPy loop beats PyTorch's kernel per thread when torch runs one thread
  const int64_t numel = first->numel();
  if (numel > small && !loop->any_unsigned && !(loop->big && at::get_num_threads() == 1)) return declined();

  // results: npu tensors from the npu caching allocator
  const c10::DeviceIndex dev = first->device().index();
  at::Tensor outs[2];
  for (int k = 0; k < loop->nout; ++k)
    outs[k] =
        empty_memory_format(first->sizes(), loop->out[k], std::nullopt, first->device(), std::nullopt, std::nullopt);

  // NumPy's own inner loop called directly when no operand needs a cast (NumPy's ufunc machinery
  // around it would only pick this same loop); else NumPy's full call below
  bool direct = loop->fn != nullptr;
  alignas(16) char scal[3][16];
  char* ptrs[5];
  npy_intp steps[5];
  for (Py_ssize_t i = 0; i < n && direct; ++i) {
    if (tobj[i]) {
      const at::Tensor& ten = THPVariable_Unpack(tobj[i]);
      direct = ten.scalar_type() == loop->in[i];
      ptrs[i] = static_cast<char*>(ten.data_ptr());
      steps[i] = npy_intp(ten.element_size());
    } else {
      direct = packScalar(args[i], codes[i], loop->in[i], scal[i]);
      ptrs[i] = scal[i];
      steps[i] = 0;
    }
  }
  PyObject* res = nullptr;
  if (direct) {
    for (int k = 0; k < loop->nout; ++k) {
      ptrs[n + k] = static_cast<char*>(outs[k].data_ptr());
      steps[n + k] = npy_intp(outs[k].element_size());
    }
    if (C10_UNLIKELY(currentStreamHasPending(dev))) {
      PyThreadState* ts = PyEval_SaveThread();
      try {
        waitCurrentStream(dev);
      } catch (...) {
        PyEval_RestoreThread(ts);
        throw;
      }
      PyEval_RestoreThread(ts);
    }
    npy_intp count = npy_intp(numel);
    loop->fn(ptrs, &count, steps, loop->fdata);
    std::feclearexcept(FE_ALL_EXCEPT);  // xp ignores NumPy's FP errors (NumPy clears them before its loops)
    if (PyErr_Occurred()) {             // a loop's own error (integer power to a negative power, ...)
      if (PyErr_ExceptionMatches(PyExc_TypeError) || PyErr_ExceptionMatches(PyExc_ValueError) ||
          PyErr_ExceptionMatches(PyExc_OverflowError)) {
        PyErr_Clear();
        return declined();
      }
      return nullptr;
    }
    res = Py_None;
    Py_INCREF(res);
  }

  // NumPy's call: views of the operands, Python scalars as they are (NumPy's weak scalars)
  PyObject* cargs[4] = {nullptr, nullptr, nullptr, nullptr};
  PyObject* oviews[2] = {nullptr, nullptr};
  PyObject* outarg = nullptr;
  bool ok = true;
  for (Py_ssize_t i = 0; i < n && ok && !direct; ++i) {
    if (tobj[i]) {
      const at::Tensor& ten = THPVariable_Unpack(tobj[i]);
      cargs[i] = npView(ten, npyType(ten.scalar_type()));
      ok = cargs[i] != nullptr;
    } else {
      cargs[i] = args[i];
      Py_INCREF(cargs[i]);
    }
  }
  for (int k = 0; k < loop->nout && ok && !direct; ++k) {
    oviews[k] = npView(outs[k], npyType(loop->out[k]));
    ok = oviews[k] != nullptr;
  }
  if (ok && !direct) {
    if (loop->nout == 1) {
      outarg = oviews[0];
      Py_INCREF(outarg);
    } else {
      outarg = PyTuple_Pack(2, oviews[0], oviews[1]);
      ok = outarg != nullptr;
    }
  }
  if (ok && !direct) {
    cargs[n] = outarg;
    // stream order: the check every eager npu op makes (pending work on the current stream first)
    if (C10_UNLIKELY(currentStreamHasPending(dev))) {
      PyThreadState* ts = PyEval_SaveThread();  // the pending work may be a Python host function
      try {
        waitCurrentStream(dev);
      } catch (...) {
        PyEval_RestoreThread(ts);
        for (auto* p : cargs) Py_XDECREF(p);  // (cargs[n] is outarg)
        for (auto* p : oviews) Py_XDECREF(p);
        throw;
      }
      PyEval_RestoreThread(ts);
    }
    PyObject* token = PyContextVar_Set(self->errvar, self->ignore);
    if (token) {
      res = PyObject_Vectorcall(self->np_ufunc, cargs, size_t(n), s_out_kw);
      PyObject *et, *ev, *tb;
      PyErr_Fetch(&et, &ev, &tb);
      if (PyContextVar_Reset(self->errvar, token) < 0) PyErr_Clear();
      PyErr_Restore(et, ev, tb);
      Py_DECREF(token);
    }
  }
  for (Py_ssize_t i = 0; i < n; ++i) Py_XDECREF(cargs[i]);
  Py_XDECREF(outarg);
  struct Views {  // the result views of NumPy's call
    PyObject** p;
    ~Views() {
      Py_XDECREF(p[0]);
      Py_XDECREF(p[1]);
    }
  } views_holder{oviews};
  if (!ok) {
    Py_XDECREF(res);
    return nullptr;
  }
  if (!res) {
    // NumPy refused (casting, an out-of-range Python int, ...): the general path raises xp's error
    if (PyErr_ExceptionMatches(PyExc_TypeError) || PyErr_ExceptionMatches(PyExc_ValueError) ||
        PyErr_ExceptionMatches(PyExc_OverflowError)) {
      PyErr_Clear();
      return declined();
    }
    return nullptr;
  }
  Py_DECREF(res);

  // wrap: xp arrays whose `_t` is the npu tensor (UIntTensor for uint16/32/64)
  // `_h` is () (the empty tuple: no view built; npudist.xp._host.host_view builds it when first needed)
  PyObject* arrays[2] = {nullptr, nullptr};
  for (int k = 0; k < loop->nout; ++k) {
    // uint16/32/64: the fresh tensor wrapped as xp's UIntTensor directly (no alias, so `_base` is None
    // and it owns its memory: what asUintTensor's as_subclass + _xp_owns_memory give, ~6,000 instructions less)
    PyObject* t = isUnsigned(loop->out[k]) ? THPVariable_Wrap(outs[k], (PyTypeObject*)self->uint_type)
                                           : THPVariable_Wrap(std::move(outs[k]));
    PyObject* a = t ? newArray((PyTypeObject*)self->array_type, self->t_offset, t) : nullptr;
    if (a) {
      Py_INCREF(s_empty);
      *reinterpret_cast<PyObject**>(reinterpret_cast<char*>(a) + self->h_offset) = s_empty;
    }
    if (!a) {
      Py_XDECREF(arrays[0]);
      return nullptr;
    }
    arrays[k] = a;
  }
  if (loop->nout == 1) return arrays[0];
  PyObject* tup = PyTuple_Pack(2, arrays[0], arrays[1]);
  Py_DECREF(arrays[0]);
  Py_DECREF(arrays[1]);
  return tup;
  END_HANDLE_TH_ERRORS
}

PyObject* hostUfuncNew(PyTypeObject* type, PyObject* args, PyObject* kwargs) {
  PyObject *np_ufunc, *resolve, *array_type, *uint_type, *as_uint, *host_dict, *state, *errvar, *ignore, *big;
  int nin, nout;
  if (!PyArg_ParseTuple(args, "OiiOOOOOO!OOO:_XpHostUfunc", &np_ufunc, &nin, &nout, &big, &resolve, &array_type,
                        &uint_type, &as_uint, &PyDict_Type, &host_dict, &state, &errvar, &ignore))
    return nullptr;
  if (!PyType_Check(array_type) || !PyType_Check(uint_type) || !PyContextVar_CheckExact(errvar)) {
    PyErr_SetString(PyExc_TypeError,
                    "_XpHostUfunc: array_type and uint_type must be classes and errvar a contextvars.ContextVar");
    return nullptr;
  }
  if (nin < 1 || nin > 3 || nout < 1 || nout > 2) {
    PyErr_Format(PyExc_ValueError, "_XpHostUfunc: nin must be 1..3 and nout 1..2, got %d and %d", nin, nout);
    return nullptr;
  }
  auto* self = reinterpret_cast<HostUfunc*>(type->tp_alloc(type, 0));
  if (!self) return nullptr;
  self->vectorcall = call;
  setOwned(self, {np_ufunc, resolve, array_type, uint_type, as_uint, host_dict, state, errvar, ignore, big});
  self->nin = nin;
  self->nout = nout;
  self->loops = new std::unordered_map<uint32_t, Loop>();
  self->t_offset = slotOffset((PyTypeObject*)array_type, s_t);
  self->h_offset = self->t_offset < 0 ? -1 : slotOffset((PyTypeObject*)array_type, s_h);
  if (self->h_offset < 0) {
    Py_DECREF(self);
    return nullptr;
  }
  self->mode_offset = slotOffset(Py_TYPE(state), s_float64_mode);
  if (self->mode_offset < 0) PyErr_Clear();  // a state object without the slot: getattr per call
  return reinterpret_cast<PyObject*>(self);
}

int hostUfuncTraverse(PyObject* o, visitproc visit, void* arg) { return traverseOwned<HostUfunc>(o, visit, arg); }

int hostUfuncClear(PyObject* o) { return clearOwned<HostUfunc>(o); }

void hostUfuncDealloc(PyObject* o) {
  PyObject_GC_UnTrack(o);
  hostUfuncClear(o);
  Py_CLEAR(reinterpret_cast<HostUfunc*>(o)->mode_seen);
  delete reinterpret_cast<HostUfunc*>(o)->loops;
  Py_TYPE(o)->tp_free(o);
}

PyObject* hostUfuncCacheSize(PyObject* o, PyObject*) {
  return PyLong_FromSize_t(reinterpret_cast<HostUfunc*>(o)->loops->size());
}

PyMethodDef hostUfuncMethods[] = {
    {"cache_size", hostUfuncCacheSize, METH_NOARGS, "Number of operand-type combinations whose loop is cached."},
    {nullptr, nullptr, 0, nullptr}};

PyTypeObject hostUfuncType = {PyVarObject_HEAD_INIT(nullptr, 0) "npudist._C._XpHostUfunc"};

}  // namespace

PyObject* hostUfuncCall(PyObject* fast, PyObject* const* args, Py_ssize_t nargs) {
  if (Py_TYPE(fast) != &hostUfuncType) Py_RETURN_NONE;
  return call(fast, args, size_t(nargs), nullptr);
}

namespace host {

bool initCommon() {
  if (s_empty) return true;
  if (_import_array() < 0) return false;  // NumPy's C API table (this process, all xp TUs)
  if (!internPythonNames()) return false;
  s_off = PyUnicode_InternFromString("off");  // (a value of float64_mode, compared, not read)
  s_out_kw = Py_BuildValue("(s)", "out");     // (NumPy's keyword, in the call xp makes)
  s_empty = PyTuple_New(0);

  return s_empty != nullptr;
}

}  // namespace host

PyObject* hostUfuncTypeObject() {
  static bool ready = false;
  if (!ready) {
    if (!initCommon()) return nullptr;
    hostUfuncType.tp_basicsize = sizeof(HostUfunc);
    hostUfuncType.tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL;
    hostUfuncType.tp_doc =
        "_XpHostUfunc(np_ufunc, nin, nout, big, resolve, array_type, uint_type, as_uint, host_dict, state, "
        "errvar, ignore)\n\nnpudist.xp's ufunc fast path: calling it with the ufunc's positional operands runs "
        "NumPy's loop on zero-copy views of the npu buffers into a new npu result and returns the xp array (a "
        "tuple for two outputs), or None when the call does not qualify (then xp's general path runs).";
    hostUfuncType.tp_new = hostUfuncNew;
    hostUfuncType.tp_dealloc = hostUfuncDealloc;
    hostUfuncType.tp_traverse = hostUfuncTraverse;
    hostUfuncType.tp_clear = hostUfuncClear;
    hostUfuncType.tp_call = PyVectorcall_Call;
    hostUfuncType.tp_vectorcall_offset = offsetof(HostUfunc, vectorcall);
    hostUfuncType.tp_methods = hostUfuncMethods;
    if (PyType_Ready(&hostUfuncType) < 0) return nullptr;
    ready = true;
  }
  Py_INCREF(&hostUfuncType);
  return reinterpret_cast<PyObject*>(&hostUfuncType);
}

}  // namespace npudist::xp
