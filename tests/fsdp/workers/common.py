"""For worker scripts written before tests/fsdp moved to run_on_ranks (``from common import ...``):
the names now live in tests/fsdp/tiny_gpt.py; new tests put their rank code in the test module."""
from tests.fsdp.tiny_gpt import (  # noqa: F401  (re-exported for worker scripts)
    GPT,
    TINY,
    B,
    Checker,
    GPTConfig,
    build_fsdp_model,
    global_batch,
    setup,
)
