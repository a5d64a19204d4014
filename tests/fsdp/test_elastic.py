"""npudist.fsdp.elastic: a checkpoint resumed on another number of ranks is a resharding request
under an elastic node range (npurun --nnodes MIN:MAX -> NPUDIST_NNODES) or when asked for, and an
error naming both sizes otherwise. (The flagship across a lost host: tests/fault_inject/test_two_hosts.py.)"""
import pytest

from npudist.fsdp import check_world_size, elastic_range


@pytest.mark.parametrize("value,expected", [(None, None), ("2", None), ("2:2", None), ("1:2", (1, 2)), ("1:4", (1, 4))])
def test_elastic_range_reads_npurun_nnodes(monkeypatch, value, expected):
    if value is None:
        monkeypatch.delenv("NPUDIST_NNODES", raising=False)
    else:
        monkeypatch.setenv("NPUDIST_NNODES", value)
    assert elastic_range() == expected


def test_a_bad_nnodes_value_is_named(monkeypatch):
    monkeypatch.setenv("NPUDIST_NNODES", "one:two")
    with pytest.raises(ValueError, match="NPUDIST_NNODES='one:two' is not a node count"):
        elastic_range()


def test_world_size_change_rules(monkeypatch):
    monkeypatch.setenv("NPUDIST_NNODES", "2")
    assert check_world_size("/c/step_8", 4, 4) is None
    with pytest.raises(RuntimeError, match=r"checkpoint /c/step_8 was written by 4 ranks, this run has 2: .*"
                                           r"npurun --nnodes MIN:MAX.*--reshard"):
        check_world_size("/c/step_8", 4, 2)
    assert check_world_size("/c/step_8", 4, 2, requested=True) == \
        "resharding checkpoint /c/step_8 from 4 ranks onto 2 (--reshard)"
    monkeypatch.setenv("NPUDIST_NNODES", "1:2")
    assert check_world_size("/c/step_8", 4, 2) == \
        "resharding checkpoint /c/step_8 from 4 ranks onto 2 (the elastic range --nnodes 1:2)"
