"""npudist.plan: what the job will do on a real cluster (docs/plan.md).

Reads step traces (``npurun --profile DIR`` writes ``DIR/steptrace/rank<R>.steptrace.json``) and a
hardware description (TOML), and predicts per rank the step time, overlap of computation and
communication, pipeline bubbles and peak memory by replaying each rank's timeline.
One CLI: ``python -m npudist.plan predict TRACE_DIR --hardware HW.toml [--json OUT]``.
"""
from __future__ import annotations

from npudist.plan.hardware import Hardware
from npudist.plan.hardware import load as load_hardware
from npudist.plan.predict import Prediction, predict
from npudist.plan.trace import load_dir as load_traces

__all__ = ["Hardware", "Prediction", "load_hardware", "load_traces", "predict"]
