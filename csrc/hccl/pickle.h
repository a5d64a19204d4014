// A small value tree written as a Python pickle (protocol 2): flight-recorder
// dumps must be pickles because PyTorch's analyzer (torchfrtrace) loads them
// with pickle.load, and C++ cannot call into Python when a process is failing.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace npudist::hccl {

class PyValue {
 public:
  enum class Kind { kNone, kBool, kInt, kFloat, kStr, kList, kTuple, kDict };

  PyValue() = default;
  static PyValue none() { return PyValue(); }
  static PyValue boolean(bool b);
  static PyValue integer(int64_t v);
  static PyValue real(double v);
  static PyValue str(std::string s);
  static PyValue list(std::vector<PyValue> items = {});
  static PyValue tuple(std::vector<PyValue> items);
  static PyValue dict();

  // Dict insertion (keys are strings); keeps insertion order.
  PyValue& set(const std::string& key, PyValue v);
  // List append.
  PyValue& append(PyValue v);

  // The pickle bytes of this value (protocol 2, readable by any Python 3).
  std::string pickle() const;

 private:
  void write(std::string& out) const;
  Kind kind_ = Kind::kNone;
  bool b_ = false;
  int64_t i_ = 0;
  double f_ = 0;
  std::string s_;
  std::vector<PyValue> items_;
  std::vector<std::pair<std::string, PyValue>> dict_;
};

}  // namespace npudist::hccl
