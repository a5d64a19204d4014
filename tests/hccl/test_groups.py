"""Sub-groups (new_group, split_group), DeviceMesh 1-D/2-D and functional
collectives on hccl, on one host and across two simulated hosts."""
import pytest

from . import launch


@pytest.mark.timeout(300)
@pytest.mark.parametrize("hosts", [None, ["hA", "hA", "hB", "hB"]], ids=["one_host", "two_hosts"])
def test_groups_and_meshes(hosts):
    r = launch("groups.py", 4, hosts=hosts, timeout=240)
    assert r.returncodes == [0] * 4, r.explain()
    for rank in range(4):
        topo, res = r.results(rank)
        assert topo["default_backend"] == "hccl"
        assert topo["cpu_default_backend"] == "gloo"  # gloo stays PyTorch's default for cpu
        if hosts:
            assert topo["hosts"] == ["hA", "hB"]
            assert topo["local_ranks"] == ([0, 1] if rank < 2 else [2, 3])
        else:
            assert len(topo["hosts"]) == 1 and topo["local_ranks"] == [0, 1, 2, 3]
        assert res["nfail"] == 0, "\n".join(res["failures"])
        assert res["checks"] >= 14


@pytest.mark.timeout(200)
def test_reinit_over_a_persistent_store():
    r = launch("reinit.py", 3, env={"HCCL_CONNECT_TIMEOUT": "20"}, timeout=150)
    assert r.returncodes == [0] * 3, r.explain()
    for rank in range(3):
        sums = r.results(rank)[-1]["sums"]
        assert [s[0] for s in sums] == [float(3 * it + 3) for it in range(3)], sums
        if rank < 2:
            assert [s[1] for s in sums] == [2.0] * 3


@pytest.mark.timeout(200)
def test_hccl_is_registered_for_npu_as_torch_npu_registers_it():
    r = launch("device_registration.py", 2, timeout=150)
    assert r.returncodes == [0] * 2, r.explain()
    for rank in range(2):
        res = {d.get("kind"): d for d in r.results(rank)}
        groups = {d["name"]: d for d in r.results(rank) if d.get("kind") == "group"}
        hccl = res["hccl"]
        assert hccl["capability"] == ["npu"] and hccl["devices"] == ["npu"], hccl
        # DCP asks for the default device; with cpu registered too, torch warned "Multiple backends ..." and chose cpu
        assert hccl["default_device"].startswith("npu") and hccl["coll_device"].startswith("npu"), hccl
        assert not [w for w in hccl["warnings"] if "Multiple backends" in w], hccl
        assert (hccl["npu_default"], hccl["cpu_default"]) == ("hccl", "gloo")
        assert "No backend type associated with device type cpu" in res["cpu_on_hccl"]["error"]
        assert groups["cpu:hccl,npu:hccl"]["cpu"] == groups["cpu:hccl,npu:hccl"]["npu"] == "ProcessGroupHCCL"
        assert (groups["cpu:gloo,npu:hccl"]["cpu"], groups["cpu:gloo,npu:hccl"]["npu"]) == (
            "ProcessGroupGloo", "ProcessGroupHCCL")
        assert r.results(rank)[-1]["nfail"] == 0, r.results(rank)[-1]["failures"]
