"""`param.data = t` across cpu and npu (npudist/device/_set_data.py): what FSDP2's fully_shard
of a cpu module and old-style `.data` moves do."""


def test_set_data_between_cpu_and_npu(python):
    r = python("""
        import torch, npudist
        p = torch.nn.Parameter(torch.ones(3))
        p.data = torch.full((3,), 2.0, device="npu")
        assert p.device.type == "npu" and p.requires_grad and p.tolist() == [2.0, 2.0, 2.0]
        (p * 3).sum().backward()
        assert p.grad.device.type == "npu" and p.grad.tolist() == [3.0, 3.0, 3.0]
        p.grad = None
        p.data = torch.zeros(2)                      # back to cpu, other shape
        assert p.device.type == "cpu" and p.shape == (2,)
        q = torch.nn.Parameter(torch.ones(2, device="npu"))
        q.data = torch.zeros(2, device="npu")        # npu -> npu unchanged
        assert q.tolist() == [0.0, 0.0]
        try:                                          # still refused: sparse is not dense
            q.data = torch.zeros(2).to_sparse()
        except RuntimeError as e:
            assert "incompatible tensor type" in str(e), e
        else:
            raise AssertionError("sparse set_data accepted")
        print("OK")
    """)
    assert r.returncode == 0 and "OK" in r.stdout, r.stderr[-3000:]
