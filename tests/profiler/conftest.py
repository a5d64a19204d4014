"""Helpers for the profiler tests: load a Chrome trace and index its events."""
import json

import pytest


def load_trace(path):
    with open(path) as f:
        return json.load(f)


def events(trace, cat=None, ph="X"):
    return [e for e in trace["traceEvents"] if e.get("ph") == ph and (cat is None or e.get("cat") == cat)]


@pytest.fixture
def trace_of(tmp_path):
    """trace_of(prof) -> the parsed Chrome trace of a finished torch.profiler.profile."""
    counter = [0]

    def export(prof):
        counter[0] += 1
        path = tmp_path / f"trace{counter[0]}.json"
        prof.export_chrome_trace(str(path))
        return load_trace(path)

    return export
