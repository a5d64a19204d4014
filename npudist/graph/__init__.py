"""Graph mode on npu: capture/replay (``npudist.graph.capture``: ``torch.npu.NPUGraph``,
``torch.accelerator.Graph``) and torch.compile registration (``npudist.graph.compile``).

Nothing here is imported by ``import npudist`` except the capture API it exports on
``torch.npu`` and the cheap hook that registers npu with Dynamo and Inductor when
``torch._dynamo`` is first imported (see docs/graph.md).
"""
