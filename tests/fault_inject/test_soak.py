"""The randomized fault soak (tests/fault_inject/soak.py): its draws are valid fault specs that
cover every kind and restart rounds 0-2, and a few runs (default tier; ``python -m
tests.fault_inject.soak --runs N`` for more) each finish with the unfaulted run's losses and final
state, every fault named, no orphan process and no /dev/shm leftover."""
import json
import random

import pytest

from npudist.fault_inject import parse
from tests.fault_inject.soak import KINDS, TWO_HOST_KINDS, draw, main, restart_times, soak


def test_draws_cover_every_kind_and_round_with_valid_specs():
    rng = random.Random(0)
    seen, rounds = set(), set()
    for _ in range(400):
        kind, rnd, specs, extra = draw(rng, steps=60, ckpt_every=10, nproc=2)
        parsed = parse(";".join(specs))
        seen.add(kind)
        rounds.add(rnd)
        # one fault per round 0..rnd: the earlier ones kill at a step so that round rnd exists
        assert [s.restart for s in parsed] == list(range(rnd + 1))
        if kind == "partition":  # two hosts x 2 ranks, round 0; the peers are the other host's ranks
            (p,) = parsed
            assert rnd == 0 and p.kind == "partition" and p.rank in range(4) and p.collective >= 20
            assert sorted(p.peers) == ([2, 3] if p.rank < 2 else [0, 1])
            continue
        assert all(s.kind == "kill" and s.step is not None for s in parsed[:-1])
        assert all(s.rank in (0, 1) for s in parsed)
        assert (extra == ["--async-ckpt"]) == (kind == "kill_ckpt_write_async")
        last = parsed[-1]
        if rnd == 0 and last.ckpt_write is not None:
            assert 1 <= last.ckpt_write <= 5
        if rnd == 0 and last.step is not None:
            assert 2 <= last.step <= 59
        if kind == "kill_restart":
            assert rnd == 1 and last.step == 1
        if kind == "slow":
            assert last.delay_ms > 8000  # past --pg-timeout: the delayed collective times out
    assert seen == set(KINDS) and rounds == {0, 1, 2}


def test_restart_times_pair_detection_with_the_next_resume():
    lines = [(1.0, "x"), (2.0, "E ... failed (exitcode: -9) local_rank: 1"), (2.5, "failed (exitcode: 1)"),
             (9.0, "[rank0]: first step after resume: step 11"), (20.0, "failed (exitcode: 1)")]
    assert restart_times(lines) == [7.0]


@pytest.mark.timeout(1500)
def test_a_few_soak_runs():
    # one host (the two-host tier's partition runs are the full soak's); the two runs and the reference at once, each its own job
    res = soak(runs=2, seed=3, steps=30, ckpt_every=10, jobs=3, kinds=tuple(k for k in KINDS if k not in TWO_HOST_KINDS))
    assert len(res) == 2 and all(r["ok"] for r in res), res


def test_resume_keeps_recorded_runs_and_refuses_another_soak(tmp_path):
    # a soak whose every run is already recorded runs nothing more (no job starts) and keeps the records
    kinds = ",".join(k for k in KINDS if k not in TWO_HOST_KINDS)
    args = {"runs": 2, "seed": 5, "steps": 30, "ckpt_every": 10, "pg_timeout": 8.0, "kinds": kinds}
    rng, draws = random.Random(5), []
    while len(draws) < 2:  # the soak's own draws (partition skipped where the two-host tier is not)
        d = draw(rng, steps=30, ckpt_every=10, nproc=2)
        if d[0] not in TWO_HOST_KINDS:
            draws.append(d)
    recs = [{"run": n, "seed": 5, "kind": draws[n][0], "round": draws[n][1], "specs": draws[n][2],
             "extra": [], "wall_s": 1.0, "restarts": 1, "restart_s": [2.0], "ok": True, "problems": [], "exit": 0,
             "orphans": 0, "leaks": 0, "jobs": 1, "started_s": 0.0} for n in range(2)]
    old = tmp_path / "old.json"
    old.write_text(json.dumps({"args": args, "wall_s": 12.5, "runs": recs}))
    new = tmp_path / "new.json"
    argv = ["--runs", "2", "--seed", "5", "--steps", "30", "--kinds", kinds, "--resume", str(old), "--json", str(new)]
    assert main(argv) == 0
    out = json.loads(new.read_text())
    assert [r["run"] for r in out["runs"]] == [0, 1] and {r["sitting"] for r in out["runs"]} == {1}
    assert out["earlier_sittings"] == [{"args": args, "wall_s": 12.5}] and out["summary"]["ok"] == 2
    with pytest.raises(SystemExit, match="--seed 5.*6"):
        main(["--runs", "2", "--seed", "6", "--steps", "30", "--kinds", kinds, "--resume", str(old)])
    recs[1]["specs"] = ["rank=1,restart=0,step=9,kind=kill"]  # not what this soak draws at run 1
    old.write_text(json.dumps({"args": args, "wall_s": 12.5, "runs": recs}))
    with pytest.raises(ValueError, match="resumed run 1 was"):
        main(argv)
    old.write_text("{}")
    with pytest.raises(SystemExit, match="not a soak --json file"):
        main(["--runs", "2", "--seed", "5", "--steps", "30", "--kinds", kinds, "--resume", str(old)])
