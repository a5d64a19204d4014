"""``torch_npu.testing``: what Ascend's op documentation examples import.

``from torch_npu.testing.testcase import TestCase, run_tests`` (TestCase.assertRtolEqual, the
comparison torch_npu's op tests use) and ``from torch_npu.testing.common_utils import
SupportedDevices``. Partial: torch_npu's other testing modules (common_methods_invocations,
common_distributed, decorators, ...) are not provided.
"""
