"""Graph mode on npu: torch.compile registration (``npudist.graph.compile``).

Capture/replay (``torch.npu.NPUGraph``) is issue #16 and lands beside this
package. Nothing here is imported by ``import npudist`` except the cheap hook
that registers npu with Dynamo and Inductor when ``torch._dynamo`` is first
imported (see docs/graph.md, "torch.compile").
"""
