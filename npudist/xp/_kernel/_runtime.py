"""The C++ prelude of every generated kernel translation unit (no torch, no CUDA headers).

It gives kernel code what CuPy's kernel code relies on, for the host: the dtypes' C++ names
(``float16`` is GCC's ``_Float16``, ``complex<float>``/``complex<double>`` are std::complex),
CUDA's function qualifiers as no-ops (so CuPy preambles with ``__device__`` functions compile),
CUDA's overloaded math (``sqrt(x)`` of a float is a float, ``min``/``max`` of mixed types,
``atomicAdd`` & co., which are plain read-modify-writes here because a kernel runs on one
thread), ``CArray`` for ``raw`` parameters (``x[i]`` by C-order index honouring strides,
``x[idx]`` with an index array, ``size()``, ``shape()``, ``strides()`` in bytes, ``data()``) and
``CIndexer`` (``_ind.size()``, ``_ind.get()``).
"""

PRELUDE = r"""
#include <cstddef>
#include <cstdint>
#include <cmath>
#include <complex>
#include <limits>
#include <type_traits>
#include <algorithm>

#define __device__
#define __host__
#define __global__
#define __forceinline__ inline
#define __noinline__ __attribute__((noinline))
#define __inline__ inline
#define CUPY_FOR(i, n) for (ptrdiff_t i = 0; i < (n); ++i)

typedef _Float16 float16;
using std::complex;
using std::abs; using std::sqrt; using std::exp; using std::log; using std::log2; using std::log10;
using std::sin; using std::cos; using std::tan; using std::asin; using std::acos; using std::atan;
using std::sinh; using std::cosh; using std::tanh; using std::asinh; using std::acosh; using std::atanh;
using std::pow; using std::atan2; using std::floor; using std::ceil; using std::round; using std::trunc;
using std::rint; using std::fabs; using std::fmod; using std::isnan; using std::isinf; using std::isfinite;
using std::hypot; using std::expm1; using std::log1p; using std::cbrt; using std::erf; using std::erfc;
using std::tgamma; using std::lgamma; using std::copysign; using std::signbit; using std::fmin; using std::fmax;
using std::nextafter; using std::exp2; using std::real; using std::imag; using std::conj; using std::arg;
using std::norm; using std::polar; using std::ldexp; using std::frexp; using std::modf; using std::fma;

// float16 math: computed in float, rounded back (as CuPy's float16 functions do)
#define NPUDIST_HALF_UNARY(f) inline float16 f(float16 x) { return (float16)std::f((float)x); }
NPUDIST_HALF_UNARY(sqrt) NPUDIST_HALF_UNARY(exp) NPUDIST_HALF_UNARY(log) NPUDIST_HALF_UNARY(log2)
NPUDIST_HALF_UNARY(log10) NPUDIST_HALF_UNARY(sin) NPUDIST_HALF_UNARY(cos) NPUDIST_HALF_UNARY(tan)
NPUDIST_HALF_UNARY(tanh) NPUDIST_HALF_UNARY(floor) NPUDIST_HALF_UNARY(ceil) NPUDIST_HALF_UNARY(fabs)
NPUDIST_HALF_UNARY(abs) NPUDIST_HALF_UNARY(expm1) NPUDIST_HALF_UNARY(log1p) NPUDIST_HALF_UNARY(round)
NPUDIST_HALF_UNARY(trunc) NPUDIST_HALF_UNARY(rint) NPUDIST_HALF_UNARY(exp2) NPUDIST_HALF_UNARY(erf)
#undef NPUDIST_HALF_UNARY
inline bool isnan(float16 x) { return std::isnan((float)x); }
inline bool isinf(float16 x) { return std::isinf((float)x); }
inline bool isfinite(float16 x) { return std::isfinite((float)x); }
inline float16 pow(float16 x, float16 y) { return (float16)std::pow((float)x, (float)y); }

// CUDA's min/max accept mixed arithmetic types
template <class A, class B>
inline typename std::common_type<A, B>::type min(A a, B b) {
  typedef typename std::common_type<A, B>::type C;
  return (C)b < (C)a ? (C)b : (C)a;
}
template <class A, class B>
inline typename std::common_type<A, B>::type max(A a, B b) {
  typedef typename std::common_type<A, B>::type C;
  return (C)a < (C)b ? (C)b : (C)a;
}

// CUDA's single-precision names
inline float sqrtf(float x) { return std::sqrt(x); }
inline float expf(float x) { return std::exp(x); }
inline float logf(float x) { return std::log(x); }
inline float powf(float x, float y) { return std::pow(x, y); }
inline float fabsf(float x) { return std::fabs(x); }
inline float tanhf(float x) { return std::tanh(x); }
inline float sinf(float x) { return std::sin(x); }
inline float cosf(float x) { return std::cos(x); }
inline float rsqrtf(float x) { return 1.0f / std::sqrt(x); }
inline double rsqrt(double x) { return 1.0 / std::sqrt(x); }

// Atomics: one thread runs a kernel, so a read-modify-write is atomic with respect to it.
template <class T, class U> inline T atomicAdd(T* p, U v) { T old = *p; *p = (T)(old + v); return old; }
template <class T, class U> inline T atomicSub(T* p, U v) { T old = *p; *p = (T)(old - v); return old; }
template <class T, class U> inline T atomicMax(T* p, U v) { T old = *p; if (old < (T)v) *p = (T)v; return old; }
template <class T, class U> inline T atomicMin(T* p, U v) { T old = *p; if ((T)v < old) *p = (T)v; return old; }
template <class T, class U> inline T atomicExch(T* p, U v) { T old = *p; *p = (T)v; return old; }
template <class T, class U> inline T atomicAnd(T* p, U v) { T old = *p; *p = old & v; return old; }
template <class T, class U> inline T atomicOr(T* p, U v) { T old = *p; *p = old | v; return old; }
template <class T, class U> inline T atomicXor(T* p, U v) { T old = *p; *p = old ^ v; return old; }
template <class T> inline T atomicCAS(T* p, T cmp, T v) { T old = *p; if (old == cmp) *p = v; return old; }
inline void __syncthreads() {}

// The loop index of a kernel (CuPy's CIndexer): _ind.size(), _ind.get()
struct CIndexer {
  ptrdiff_t size_, i_;
  explicit CIndexer(ptrdiff_t n) : size_(n), i_(0) {}
  ptrdiff_t size() const { return size_; }
  ptrdiff_t get() const { return i_; }
  void set(ptrdiff_t i) { i_ = i; }
};

// A raw parameter (CuPy's CArray). meta: shape[ndim], strides in bytes [ndim].
template <class T, int NDIM, bool C_CONTIGUOUS>
struct CArray {
  T* data_;
  ptrdiff_t size_;
  ptrdiff_t shape_[NDIM > 0 ? NDIM : 1];
  ptrdiff_t strides_[NDIM > 0 ? NDIM : 1];
  CArray(void* p, const int64_t* meta) : data_((T*)p), size_(1) {
    for (int d = 0; d < NDIM; ++d) { shape_[d] = meta[d]; strides_[d] = meta[NDIM + d]; size_ *= shape_[d]; }
  }
  ptrdiff_t size() const { return size_; }
  const ptrdiff_t* shape() const { return shape_; }
  const ptrdiff_t* strides() const { return strides_; }
  int ndim() const { return NDIM; }
  T* data() const { return data_; }
  // integer index: the i-th element in C order (a template, so ref[0] is not a null pointer)
  template <class I, typename std::enable_if<std::is_integral<I>::value, int>::type = 0>
  T& operator[](I i_) const {
    ptrdiff_t i = (ptrdiff_t)i_;
    if (C_CONTIGUOUS) return data_[i];
    char* p = (char*)data_;
    for (int d = NDIM - 1; d >= 0; --d) {
      ptrdiff_t s = shape_[d];
      p += (i % s) * strides_[d];
      i /= s;
    }
    return *(T*)p;
  }
  T& operator[](const ptrdiff_t* idx) const {
    char* p = (char*)data_;
    for (int d = 0; d < NDIM; ++d) p += idx[d] * strides_[d];
    return *(T*)p;
  }
  T& operator[](const int* idx) const {
    char* p = (char*)data_;
    for (int d = 0; d < NDIM; ++d) p += (ptrdiff_t)idx[d] * strides_[d];
    return *(T*)p;
  }
};
"""
