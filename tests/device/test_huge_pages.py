"""The driver backs npu memory mappings with 2 MiB pages (NPUDIST_DEVICE_HUGE_PAGES, docs/env_vars.md)."""
import os

import pytest

from npudist.testing.multiproc import run_python

# Prints the kB of the npu tensor's mapping that are mapped by 2 MiB pages (ShmemPmdMapped in smaps).
_PROBE = r"""
import torch, npudist
t = torch.ones(1 << 20, dtype=torch.float64, device="npu")     # 8 MiB: a 20 MiB large-pool segment
p = t.data_ptr()
inside = False
for line in open("/proc/self/smaps"):
    f = line.split()
    if "-" in f[0] and ":" not in f[0]:
        lo, hi = (int(x, 16) for x in f[0].split("-"))
        inside = lo <= p < hi
    elif inside and f[0] == "ShmemPmdMapped:":
        print(int(f[1]))
        break
assert float(t.sum()) == 1 << 20                              # the data is intact
"""


def _probe(value):
    out = run_python(["-c", _PROBE], env={"NPUDIST_DEVICE_HUGE_PAGES": value}, timeout=120)
    assert out.returncode == 0, out.stderr
    return int(out.stdout.split()[-1])


def _kernel_has_collapse():
    major, minor = (int(x) for x in os.uname().release.split(".")[:2])
    return (major, minor) >= (6, 1)


@pytest.mark.skipif(not _kernel_has_collapse(), reason="MADV_COLLAPSE needs Linux 6.1+ (4 KiB pages then)")
def test_segments_get_2mib_pages_unless_turned_off():
    assert _probe(None) >= 8 * 1024      # the tensor's 8 MiB at least
    assert _probe("0") == 0
    assert _probe("4MiB") == 0           # the 20 MiB segment is larger than the limit


def test_invalid_value_names_the_variable():
    out = run_python(["-c", "import torch, npudist; torch.empty(1, device='npu')"],
                     env={"NPUDIST_DEVICE_HUGE_PAGES": "lots"}, timeout=120)
    assert out.returncode != 0 and "NPUDIST_DEVICE_HUGE_PAGES='lots'" in out.stderr
