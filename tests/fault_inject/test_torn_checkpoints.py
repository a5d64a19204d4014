"""Torn and damaged DCP checkpoints are named with their reason (npudist.fsdp.checkpoint_problem),
and the ckpt_write kill fault tears a checkpoint half-way through a shard file (one process,
no process group: DCP saves without one)."""
import os
import pickle

import pytest
import torch
import torch.distributed.checkpoint as dcp

from npudist.fsdp import checkpoint_problem, checkpoint_writer
from npudist.testing.multiproc import run_python


def save(path):
    state = {"w": torch.arange(4096, dtype=torch.float32), "b": torch.ones(3), "step": 7}
    dcp.save(state, storage_writer=checkpoint_writer(str(path)))
    return state


def shard_files(path):
    return sorted(n for n in os.listdir(path) if n.endswith(".distcp"))


def test_a_whole_checkpoint_has_no_problem_and_loads(tmp_path):
    save(tmp_path / "ok")
    assert checkpoint_problem(tmp_path / "ok") is None
    back = {"w": torch.zeros(4096), "b": torch.zeros(3), "step": 0}
    dcp.load(back, checkpoint_id=str(tmp_path / "ok"))
    assert torch.equal(back["w"], torch.arange(4096, dtype=torch.float32)) and back["step"] == 7


def test_each_kind_of_damage_is_named(tmp_path):
    cases = {}
    for name in ("no_meta", "bad_meta", "empty_meta", "no_shard", "short_shard"):
        save(tmp_path / name)
        cases[name] = tmp_path / name
    os.remove(cases["no_meta"] / ".metadata")
    (cases["bad_meta"] / ".metadata").write_bytes(b"\x80\x05garbage")
    (cases["empty_meta"] / ".metadata").write_bytes(pickle.dumps({"not": "a Metadata"}))
    os.remove(cases["no_shard"] / shard_files(cases["no_shard"])[0])
    shard = cases["short_shard"] / shard_files(cases["short_shard"])[0]
    size = shard.stat().st_size
    os.truncate(shard, size - 100)

    assert checkpoint_problem(cases["no_meta"]) == "no .metadata (the save did not finish)"
    assert checkpoint_problem(cases["bad_meta"]).startswith("unreadable .metadata (")
    assert checkpoint_problem(cases["empty_meta"]).startswith("unreadable .metadata")
    assert checkpoint_problem(cases["no_shard"]) == f"shard file {shard_files(cases['short_shard'])[0]} is missing"
    assert checkpoint_problem(cases["short_shard"]) == (
        f"shard file {shard.name} is truncated: {size - 100} bytes, the metadata needs {size}")
    assert checkpoint_problem(tmp_path / "absent") == "not a directory"


@pytest.mark.timeout(120)
def test_ckpt_write_kill_tears_the_nth_save_half_way(tmp_path):
    """The 2nd save of a process with rank=0,kind=kill,ckpt_write=2 dies inside its shard file:
    the 1st checkpoint is whole, the 2nd has half a shard file and no .metadata."""
    code = ("import sys, torch, npudist, torch.distributed.checkpoint as dcp\n"
            "from npudist.fsdp import checkpoint_writer\n"
            "for i in (1, 2, 3):\n"
            "    dcp.save({'w': torch.arange(65536.0) + i}, storage_writer=checkpoint_writer(sys.argv[1] + f'/s{i}'))\n"
            "    print('saved', i, flush=True)\n")
    r = run_python(["-c", code, str(tmp_path)], env={"NPUDIST_FAULT_INJECT": "rank=0,kind=kill,ckpt_write=2",
                                                       "RANK": "0"}, timeout=100)
    assert r.returncode == -9, (r.returncode, r.stdout, r.stderr)
    assert r.stdout.split("\n")[:1] == ["saved 1"] and "saved 2" not in r.stdout, r.stdout
    assert "[npudist fault] rank 0: SIGKILL during checkpoint write #2 (__0_0.distcp) " \
           "(injected: rank=0,kind=kill,ckpt_write=2)" in r.stderr, r.stderr
    assert checkpoint_problem(tmp_path / "s1") is None
    assert checkpoint_problem(tmp_path / "s2") == "no .metadata (the save did not finish)"
    written = (tmp_path / "s2" / "__0_0.distcp").stat().st_size
    assert 0 < written < (tmp_path / "s1" / "__0_0.distcp").stat().st_size, written
    assert not (tmp_path / "s3").exists()
