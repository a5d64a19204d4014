"""Where a benchmark's JSON goes: ``write_json(path, data)`` creates the folder
(benchmarks/results/ by default in each script) and says on stderr where it wrote."""
import json
import os
import sys


def write_json(path, data):
    """Writes ``data`` as indented JSON to ``path`` (its folder created if missing)."""
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with open(path, "w") as f:
        json.dump(data, f, indent=1)
    print(f"wrote {path}", file=sys.stderr)
