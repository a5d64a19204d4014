"""Tests of npudist.graph (torch.compile on npu); multi-rank cases run functions of their test
modules on real ranks (npudist.testing.multiproc.run_on_ranks)."""
