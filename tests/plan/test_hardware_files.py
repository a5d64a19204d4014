"""The Ascend hardware files shipped with npudist: each loads by name, and each number is the one docs/plan.md
("Ascend hardware") gives with its source."""
import os
import re

import pytest

from npudist.plan import hardware

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
VARIANTS = ("910b1", "910b2", "910b3", "910b4")


def _docs_table() -> dict[str, list[str]]:
    text = open(os.path.join(REPO, "docs", "plan.md"), encoding="utf-8").read()
    section = text[text.index("## Ascend hardware"):text.index("### How far the assumptions")]
    rows = {}
    for line in section.splitlines():
        m = re.match(r"\| `([a-z_.0-9]+)` \|(.*)\|", line)
        if m:
            rows[m.group(1)] = [c.strip() for c in m.group(2).split("|")][:4]
    return rows


def _value(raw: dict, key: str):
    v = raw
    for part in key.split("."):
        v = v[part]
    return v


def test_every_shipped_name_loads():
    names = hardware.shipped()
    assert set(names) == {"atlas800t-a2"} | {f"atlas800t-a2-{v}" for v in VARIANTS}
    for name in names:
        hw = hardware.load(name)
        assert hw.devices_per_node == 8 and hw.topology == "full_mesh" and hw.links_per_device == 7
    assert hardware.load("atlas800t-a2").name == "atlas800t-a2-910b2"


@pytest.mark.parametrize("variant", VARIANTS)
def test_numbers_match_the_docs(variant):
    table = _docs_table()
    assert len(table) >= 15, "docs/plan.md lost its hardware table"
    raw = hardware.load(f"atlas800t-a2-{variant}").raw
    col = VARIANTS.index(variant)
    for key, cells in table.items():
        expected, actual = cells[col], _value(raw, key)
        if isinstance(actual, str):
            assert actual == expected, key
        elif isinstance(actual, list):
            assert actual == [int(x) for x in expected.strip("[]").split(",")], key
        else:
            assert actual == pytest.approx(float(expected)), key


@pytest.mark.parametrize("variant", VARIANTS)
def test_peak_follows_cores_and_clock(variant):
    # ai_core_cnt x 16^3 multiply-adds x 2 x cube_freq (CANN's .ini), to the file's one decimal
    mhz = {"910b1": 1850, "910b2": 1800, "910b3": 1800, "910b4": 1500}[variant]
    hw = hardware.load(f"atlas800t-a2-{variant}")
    assert hw.peak("bfloat16") / 1e12 == pytest.approx(hw.cores * 4096 * 2 * mhz * 1e6 / 1e12, abs=0.05)


def test_unknown_name_lists_the_shipped_ones():
    with pytest.raises(FileNotFoundError, match="atlas800t-a2-910b3"):
        hardware.load("atlas900")


def _numbers(d: dict, prefix: str = "") -> dict[str, object]:
    out = {}
    for k, v in d.items():
        key = f"{prefix}{k}"
        if isinstance(v, dict):
            out.update(_numbers(v, key + "."))
        elif k != "name":
            out[key] = v
    return out


@pytest.mark.parametrize("variant", VARIANTS)
def test_every_number_of_the_file_is_in_the_docs(variant):
    # a value added to a file without its source in docs/plan.md's table fails here
    raw = hardware.load(f"atlas800t-a2-{variant}").raw
    table = _docs_table()
    documented = set(table) | {"compute.peak_tflops"}
    missing = [k for k in _numbers(raw) if k not in documented and not k.startswith("compute.peak_tflops.")
               and k not in ("node.devices", "node.compute_resources", "compute.host_blocking",
                             "compute.host_speed")]
    assert not missing, f"not in docs/plan.md's 'Ascend hardware' table: {missing}"


@pytest.mark.parametrize("variant", VARIANTS)
def test_vector_rate_follows_the_ini(variant):
    # vector_core_cnt x 256 B per cycle (vec_calc_size 128 fp16 lanes) x the AI core clock
    cores, mhz = {"910b1": (48, 1850), "910b2": (48, 1800), "910b3": (40, 1800), "910b4": (40, 1500)}[variant]
    hw = hardware.load(f"atlas800t-a2-{variant}")
    assert hw.vector_rate() == pytest.approx(cores * 256 * mhz * 1e6)
    assert hw.vector_cores == 2 * hw.cores  # two AIV per AI core on AIC-C-220 (the .ini's counts)
