"""The randomized fault soak (tests/fault_inject/soak.py): its draws are valid fault specs, and a
few runs (default tier; ``python -m tests.fault_inject.soak --runs N`` for more) each finish
with the unfaulted run's losses and final state, no orphan process and no /dev/shm leftover."""
import random

import pytest

from npudist.fault_inject import parse
from tests.fault_inject.soak import KINDS, draw, soak


def test_draws_cover_every_kind_with_valid_specs():
    rng = random.Random(0)
    seen = set()
    for _ in range(200):
        kind, spec, extra = draw(rng, steps=20, ckpt_every=5, nproc=2)
        (s,) = parse(spec)
        seen.add(kind)
        assert s.rank in (0, 1) and s.restart == 0
        assert (extra == ["--async-ckpt"]) == (kind == "kill_ckpt_write_async")
        if s.ckpt_write is not None:
            assert 1 <= s.ckpt_write <= 3
    assert seen == set(KINDS)


@pytest.mark.timeout(1500)
def test_a_few_soak_runs():
    res = soak(runs=2, seed=3, steps=12, ckpt_every=4)
    assert len(res) == 2 and all(r["ok"] for r in res), res
