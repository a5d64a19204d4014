"""Tests of FSDP2/DDP/DCP on npu: each test module holds the function its ranks run
(npudist.testing.multiproc.run_on_ranks) beside its asserts; tiny_gpt has the model and data."""
