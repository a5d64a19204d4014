"""npu graph mode: capture/replay (``capture``) and torch.compile registration."""
