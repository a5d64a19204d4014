"""The NPUDIST_FAULT_INJECT spec language: what parses, and the error for each wrong part."""
import pytest

from npudist.fault_inject import FaultSpec, FaultSpecError, check_world, parse


def test_every_kind_parses():
    specs = parse("rank=1,collective=120,kind=hang; rank=2,step=50,kind=kill;rank=0,kind=slow,delay_ms=30,every=4;"
                  "rank=3,kind=oom,alloc=1000;kind=store_down,after_s=2.5;rank=1,kind=partition,peers=0+2,restart=*;")
    assert [s.kind for s in specs] == ["hang", "kill", "slow", "oom", "store_down", "partition"]
    assert specs[0] == FaultSpec(kind="hang", text="rank=1,collective=120,kind=hang", rank=1, collective=120)
    assert specs[1].step == 50 and specs[2].every == 4 and specs[2].delay_ms == 30 and specs[3].alloc == 1000
    assert specs[4].rank is None and specs[4].after_s == 2.5 and specs[4].restart == 0
    assert specs[5].peers == (0, 2) and specs[5].restart is None
    assert specs[4].applies_to(7, 0) and not specs[4].applies_to(7, 1) and specs[5].applies_to(1, 3)
    assert not specs[0].applies_to(0, 0)
    assert parse("") == [] and parse(" ; ") == []


@pytest.mark.parametrize("text,message", [
    ("rank=1,kind=hng,collective=2", "kind 'hng' is not one of hang, kill, slow, oom, store_down, partition"),
    ("rank=1,collective=2", "no kind="),
    ("rank=1,kind=hang", "kind=hang needs collective="),
    ("rank=1,kind=hang,collective=0", "collective=0 must be >= 1"),
    ("rank=x,kind=hang,collective=2", "rank='x' is not an integer"),
    ("rank=1,kind=hang,collective=2,delay_ms=3", "field 'delay_ms' does not apply to kind=hang"),
    ("rank=1,kind=hang,colective=2", "unknown field 'colective'"),
    ("rank=1,rank=2,kind=hang,collective=2", "field 'rank' given twice"),
    ("rank=1,,kind=hang,collective=2", "empty field"),
    ("rank=1,kind,collective=2", "field 'kind' is not key=value"),
    ("kind=store_down,after_s=soon", "after_s='soon' is not a number of seconds"),
    ("kind=store_down,after_s=-1", "after_s=-1 must be a finite number >= 0"),
    ("kind=partition,peers=0", "kind=partition needs rank="),
    ("rank=1,kind=partition,peers=0+1", "includes the rank itself (1)"),
    ("rank=1,kind=partition,peers=0+0", "names a rank twice"),
    ("kind=slow,delay_ms=5,every=0", "every=0 must be >= 1"),
    ("kind=kill,step=3,restart=-1", "restart=-1 must be >= 0"),
    ("kind=kill", "kind=kill needs exactly one of step= (the Nth training step) or ckpt_write="),
    ("kind=kill,step=3,ckpt_write=1", "kind=kill needs exactly one of step="),
    ("kind=kill,ckpt_write=0", "ckpt_write=0 must be >= 1"),
    ("kind=hang,collective=1,ckpt_write=1", "field 'ckpt_write' does not apply to kind=hang"),
])
def test_bad_spec_names_the_wrong_part(text, message):
    with pytest.raises(FaultSpecError) as e:
        parse("kind=oom,alloc=1;" + text)
    assert f"NPUDIST_FAULT_INJECT: spec 2 {text!r}: " in str(e.value) and message in str(e.value), str(e.value)


def test_kill_during_a_checkpoint_write_parses():
    (spec,) = parse("rank=1,kind=kill,ckpt_write=2,restart=*")
    assert spec.kind == "kill" and spec.ckpt_write == 2 and spec.step is None and spec.restart is None
    assert "ckpt_write" not in spec.to_native()  # counted in Python, never handed to the native side


def test_ranks_outside_the_world():
    check_world(parse("rank=1,kind=hang,collective=1"), 2)
    with pytest.raises(FaultSpecError, match="names rank 4, but the job has 4 ranks"):
        check_world(parse("rank=0,kind=partition,peers=4"), 4)
