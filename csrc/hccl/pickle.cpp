#include "hccl/pickle.h"

#include <cstring>

namespace npudist::hccl {

PyValue PyValue::boolean(bool b) {
  PyValue v;
  v.kind_ = Kind::kBool;
  v.b_ = b;
  return v;
}
PyValue PyValue::integer(int64_t x) {
  PyValue v;
  v.kind_ = Kind::kInt;
  v.i_ = x;
  return v;
}
PyValue PyValue::real(double x) {
  PyValue v;
  v.kind_ = Kind::kFloat;
  v.f_ = x;
  return v;
}
PyValue PyValue::str(std::string s) {
  PyValue v;
  v.kind_ = Kind::kStr;
  v.s_ = std::move(s);
  return v;
}
PyValue PyValue::list(std::vector<PyValue> items) {
  PyValue v;
  v.kind_ = Kind::kList;
  v.items_ = std::move(items);
  return v;
}
PyValue PyValue::tuple(std::vector<PyValue> items) {
  PyValue v;
  v.kind_ = Kind::kTuple;
  v.items_ = std::move(items);
  return v;
}
PyValue PyValue::dict() {
  PyValue v;
  v.kind_ = Kind::kDict;
  return v;
}

PyValue& PyValue::set(const std::string& key, PyValue v) {
  dict_.emplace_back(key, std::move(v));
  return *this;
}

PyValue& PyValue::append(PyValue v) {
  items_.push_back(std::move(v));
  return *this;
}

namespace {
// Opcodes of pickle protocol 2 (Lib/pickletools.py documents them).
constexpr char kProto = '\x80', kStop = '.', kNone = 'N', kTrue = '\x88', kFalse = '\x89', kBinInt = 'J',
               kLong1 = '\x8a', kBinFloat = 'G', kBinUnicode = 'X', kEmptyList = ']', kEmptyDict = '}', kMark = '(',
               kAppends = 'e', kSetItems = 'u', kTuple = 't';

void putLE32(std::string& out, uint32_t v) {
  for (int i = 0; i < 4; ++i) out.push_back(char((v >> (8 * i)) & 0xff));
}

void putStr(std::string& out, const std::string& s) {
  out.push_back(kBinUnicode);
  putLE32(out, uint32_t(s.size()));
  out += s;
}
}  // namespace

void PyValue::write(std::string& out) const {
  switch (kind_) {
    case Kind::kNone:
      out.push_back(kNone);
      break;
    case Kind::kBool:
      out.push_back(b_ ? kTrue : kFalse);
      break;
    case Kind::kInt:
      if (i_ >= INT32_MIN && i_ <= INT32_MAX) {
        out.push_back(kBinInt);
        putLE32(out, uint32_t(int32_t(i_)));
      } else {
        out.push_back(kLong1);
        out.push_back(char(8));  // two's complement, little endian
        for (int i = 0; i < 8; ++i) out.push_back(char((uint64_t(i_) >> (8 * i)) & 0xff));
      }
      break;
    case Kind::kFloat: {
      out.push_back(kBinFloat);
      uint64_t bits;
      std::memcpy(&bits, &f_, 8);
      for (int i = 7; i >= 0; --i) out.push_back(char((bits >> (8 * i)) & 0xff));  // big endian
      break;
    }
    case Kind::kStr:
      putStr(out, s_);
      break;
    case Kind::kList:
      out.push_back(kEmptyList);
      if (!items_.empty()) {
        out.push_back(kMark);
        for (const auto& v : items_) v.write(out);
        out.push_back(kAppends);
      }
      break;
    case Kind::kTuple:
      out.push_back(kMark);
      for (const auto& v : items_) v.write(out);
      out.push_back(kTuple);
      break;
    case Kind::kDict:
      out.push_back(kEmptyDict);
      if (!dict_.empty()) {
        out.push_back(kMark);
        for (const auto& [k, v] : dict_) {
          putStr(out, k);
          v.write(out);
        }
        out.push_back(kSetItems);
      }
      break;
  }
}

std::string PyValue::pickle() const {
  std::string out;
  out.push_back(kProto);
  out.push_back(char(2));
  write(out);
  out.push_back(kStop);
  return out;
}

}  // namespace npudist::hccl
