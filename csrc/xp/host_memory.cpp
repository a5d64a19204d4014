// NumPy's results straight in npu memory. While xp runs a NumPy function on views
// of npu arrays, NumPy's data-memory handler (NEP 49, PyDataMem_SetHandler: a context variable, so
// only this call's context is affected) is one that takes every buffer NumPy allocates from the npu
// caching allocator. A result NumPy returns then already lies in npu memory and becomes the xp
// result's tensor as it is, instead of being copied once more into npu memory: at 1M elements that
// copy was a quarter to a half of cumsum's, take's, where's or a transposed copy's time.
//
// Each buffer is a c10::Storage held in a table by its address until NumPy frees it; a result
// tensor shares that Storage, so the memory lives as long as either holds it and goes back to the
// caching allocator (stream semantics unchanged: allocated on the device's current stream).
#include "xp/host_common.h"

#include <c10/core/Storage.h>
#include <c10/core/TensorImpl.h>

#include <cstring>
#include <mutex>
#include <unordered_map>

#include "core/allocator/caching_allocator.h"

namespace npudist::xp::host {
namespace {

std::mutex g_mutex;
std::unordered_map<void*, c10::Storage>* g_blocks = new std::unordered_map<void*, c10::Storage>();  // never freed
PyObject* g_capsule = nullptr;

void* npuMalloc(void*, size_t size) {
  try {
    const size_t n = size ? size : 1;
    auto& alloc = npudist::core::npuAllocator();
    c10::DataPtr dp = alloc.allocate(n);
    void* p = dp.get();
    if (!p) return nullptr;
    // resizable, as the storages of torch.empty: xp may resize_ a result it was given as out=
    c10::Storage s(c10::Storage::use_byte_size_t(), n, std::move(dp), &alloc, /*resizable=*/true);
    std::lock_guard<std::mutex> g(g_mutex);
    g_blocks->emplace(p, std::move(s));
    return p;
  } catch (...) {
    return nullptr;  // NumPy raises MemoryError
  }
}

void* npuCalloc(void* ctx, size_t nelem, size_t elsize) {
  if (elsize && nelem > SIZE_MAX / elsize) return nullptr;
  void* p = npuMalloc(ctx, nelem * elsize);
  if (p) std::memset(p, 0, nelem * elsize);
  return p;
}

void npuFree(void*, void* ptr, size_t) {
  if (!ptr) return;
  c10::Storage s;
  {
    std::lock_guard<std::mutex> g(g_mutex);
    auto it = g_blocks->find(ptr);
    if (it == g_blocks->end()) return;
    s = std::move(it->second);
    g_blocks->erase(it);
  }
  // s released here, outside the table's lock (the caching allocator takes its own)
}

void* npuRealloc(void* ctx, void* ptr, size_t new_size) {
  if (!ptr) return npuMalloc(ctx, new_size);
  size_t old = 0;
  {
    std::lock_guard<std::mutex> g(g_mutex);
    auto it = g_blocks->find(ptr);
    if (it == g_blocks->end()) return nullptr;
    old = it->second.nbytes();
  }
  void* p = npuMalloc(ctx, new_size);
  if (!p) return nullptr;
  std::memcpy(p, ptr, std::min(old, new_size));
  npuFree(ctx, ptr, old);
  return p;
}

PyDataMem_Handler g_handler = {
    "npudist_npu_caching_allocator", 1, {nullptr, npuMalloc, npuCalloc, npuRealloc, npuFree}};

}  // namespace

PyObject* npuMemoryBegin() {
  if (!g_capsule) {
    g_capsule = PyCapsule_New(&g_handler, "mem_handler", nullptr);
    if (!g_capsule) return nullptr;
  }
  return PyDataMem_SetHandler(g_capsule);
}

void npuMemoryEnd(PyObject* previous) {
  PyObject *et, *ev, *tb;
  PyErr_Fetch(&et, &ev, &tb);
  PyObject* r = PyDataMem_SetHandler(previous);
  if (r)
    Py_DECREF(r);
  else
    PyErr_Clear();
  Py_DECREF(previous);
  PyErr_Restore(et, ev, tb);
}

at::Tensor adoptNpuMemory(PyArrayObject* arr, c10::ScalarType st) {
  PyArrayObject* root = arr;
  while (PyArray_BASE(root) && PyArray_Check(PyArray_BASE(root)))
    root = reinterpret_cast<PyArrayObject*>(PyArray_BASE(root));
  if (PyArray_BASE(root) || !PyArray_CHKFLAGS(root, NPY_ARRAY_OWNDATA)) return {};
  c10::Storage s;
  {
    std::lock_guard<std::mutex> g(g_mutex);
    auto it = g_blocks->find(PyArray_DATA(root));
    if (it == g_blocks->end()) return {};
    s = it->second;
  }
  const int nd = PyArray_NDIM(arr);
  const npy_intp item = PyArray_ITEMSIZE(arr);
  const auto offset = static_cast<char*>(PyArray_DATA(arr)) - static_cast<char*>(s.mutable_data());
  if (item <= 0 || offset < 0 || offset % item) return {};
  std::vector<int64_t> sizes(static_cast<size_t>(nd)), strides(static_cast<size_t>(nd));
  npy_intp last = offset;  // byte just past the farthest element
  for (int i = 0; i < nd; ++i) {
    const npy_intp d = PyArray_DIMS(arr)[i], sb = PyArray_STRIDES(arr)[i];
    if (sb < 0 || sb % item) return {};
    sizes[size_t(i)] = d;
    strides[size_t(i)] = sb / item;
    if (d == 0)
      last = offset;
    else
      last += (d - 1) * sb;
  }
  if (PyArray_SIZE(arr) > 0 && size_t(last + item) > s.nbytes()) return {};
  auto t = at::detail::make_tensor<c10::TensorImpl>(std::move(s), c10::DispatchKeySet(c10::DispatchKey::PrivateUse1),
                                                    c10::scalarTypeToTypeMeta(st));
  t.unsafeGetTensorImpl()->set_sizes_and_strides(sizes, strides, offset / item);
  return t;
}

}  // namespace npudist::xp::host
