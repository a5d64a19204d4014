"""Which third-party headers a unit of csrc/ includes, directly or through npudist's own headers:
shared by setup.py (which units get the precompiled header), tests/test_build_units.py and
benchmarks/build_time.py. Standard library only; not installed with the package."""
import os
import re

CSRC = os.path.join(os.path.dirname(os.path.abspath(__file__)), "csrc")
THIRD_PARTY = re.compile(r"^(torch|ATen|c10|pybind11|caffe2)/|^Python\.h$")
"""torch's, ATen's, c10's, pybind11's and Python's headers."""
HEAVY = re.compile(r"^(torch|ATen|pybind11)/|^Python\.h$")
"""The third-party headers that are expensive to parse (c10's alone are not)."""
_INCLUDE = re.compile(r'^\s*#\s*include\s*[<"]([^>"]+)[>"]', re.MULTILINE)


def includes(path):
    """The names ``path`` #includes, in order."""
    with open(path, errors="replace") as f:
        return _INCLUDE.findall(f.read())


def _own(including, name):
    for base in (os.path.dirname(including), CSRC):
        p = os.path.normpath(os.path.join(base, name))
        if os.path.isfile(p):
            return p
    return None


def third_party_includes(path, pattern=THIRD_PARTY, seen=None):
    """{(file relative to csrc/, header)}: the headers matching ``pattern`` that ``path`` includes,
    directly or through npudist's own headers (followed transitively)."""
    seen = set() if seen is None else seen
    if path in seen:
        return set()
    seen.add(path)
    found = set()
    for name in includes(path):
        if pattern.search(name):
            found.add((os.path.relpath(path, CSRC), name))
        else:
            own = _own(path, name)
            if own:
                found |= third_party_includes(own, pattern, seen)
    return found


def includes_heavy_headers(path):
    """Whether ``path`` includes a torch, ATen, pybind11 or Python header, directly or through
    npudist's own headers."""
    return bool(third_party_includes(path, HEAVY))
