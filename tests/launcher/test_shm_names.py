"""One naming rule for /dev/shm entries: the engine (csrc/util/shm_name.cpp)
and npurun's cleanup (npudist/_shm_names.py) derive the same prefix from any job tag, long tags
(npurun accepts 64 characters; names keep 32) included, and npurun removes what a job with a
long tag left."""
import os
import random
import string

import pytest

from npudist import _C, _shm_names

from . import JOB, facts, run_npurun

TAGS = ["a", "job", "", "x" * 32, "y" * 33, "z" * 64, "mytag01", "A.b_c" * 12, "with-dash", "spa ce", "ünï",
        "t/slash", "0123456789abcdef" * 4]


def _cpp_prefix(tag):
    return _C._shm_job_prefix(os.fsencode(tag))


@pytest.mark.parametrize("tag", TAGS)
def test_engine_and_cleanup_agree(tag):
    py = _shm_names.job_prefix(tag)
    assert py == _cpp_prefix(tag)
    component = py[len("npudist-"):-1]
    assert 1 <= len(component) <= _shm_names.MAX_JOB_COMPONENT and "-" not in component
    assert set(component) <= set(string.ascii_letters + string.digits + "._")


def test_random_tags_agree_and_long_tags_stay_apart():
    rng = random.Random(25)
    alphabet = string.ascii_letters + string.digits + "._"
    seen = {}
    for _ in range(300):
        tag = "".join(rng.choice(alphabet) for _ in range(rng.randint(1, 64)))
        assert _shm_names.job_prefix(tag) == _cpp_prefix(tag), tag
        seen.setdefault(_shm_names.job_prefix(tag), set()).add(tag)
    assert all(len(tags) == 1 for tags in seen.values())
    # two 64-character tags that share their first 40 characters get different names
    a, b = "p" * 40 + "a" * 24, "p" * 40 + "b" * 24
    assert _shm_names.job_prefix(a) != _shm_names.job_prefix(b)
    assert _shm_names.job_component(a).startswith("p" * 19 + ".")


@pytest.mark.timeout(180)
def test_npurun_removes_the_entries_of_a_64_character_tag(shm_of):
    tag = "long_tag." + "k" * 44 + os.urandom(4).hex() + "end"
    tag = tag[:64]
    assert len(tag) == 64
    r = run_npurun(["--nproc", "2", JOB, "ok"], env={"NPUDIST_JOB_TAG": tag})
    assert r.returncode == 0, r.stdout + r.stderr
    assert {f["tag"] for f in facts(r.stdout).values()} == {tag}
    # each rank left an entry named by the engine's rule; npurun removed both
    assert "removed 2 leftover /dev/shm entries" in r.stdout + r.stderr, r.stdout + r.stderr
    assert shm_of(tag) == []
