#include "core/graph/kernel_call.h"

#include <c10/util/Exception.h>

#include <array>
#include <utility>

namespace npudist::core::graph {
namespace {

static_assert(sizeof(void*) == 8 && sizeof(intptr_t) == sizeof(int64_t),
              "compiled kernels are called with integer-class arguments: LP64 only");

using Caller = void (*)(void*, const intptr_t*);

template <size_t I>
using Word = intptr_t;

template <size_t... I>
void callWith(void* fn, const intptr_t* a, std::index_sequence<I...>) {
  using Fn = void (*)(Word<I>...);
  reinterpret_cast<Fn>(fn)(a[I]...);
}

template <size_t N>
void callN(void* fn, const intptr_t* a) {
  callWith(fn, a, std::make_index_sequence<N>{});
}

template <size_t... N>
constexpr std::array<Caller, sizeof...(N)> makeTable(std::index_sequence<N...>) {
  return {&callN<N>...};
}

constexpr auto kCallers = makeTable(std::make_index_sequence<kMaxKernelArgs + 1>{});

}  // namespace

void callKernel(void* fn, const intptr_t* args, size_t n) {
  TORCH_CHECK(n <= kMaxKernelArgs, "compiled npu kernel with ", n, " arguments: at most ", kMaxKernelArgs,
              " are supported");
  kCallers[n](fn, args);
}

}  // namespace npudist::core::graph
