"""``python -m npudist.profiler merge DIR -o job.json`` (see npudist.profiler.merge)."""
from __future__ import annotations

import argparse
import sys

from npudist.profiler.merge import MergeError, merge_traces


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m npudist.profiler",
                                     description="Tools for torch.profiler traces of npu jobs.")
    sub = parser.add_subparsers(dest="command", required=True)
    m = sub.add_parser("merge", help="merge the per-rank traces of a folder into one trace, one process per rank")
    m.add_argument("folder", help="folder of per-rank traces (the DIR of npurun --profile DIR)")
    m.add_argument("-o", "--output", required=True, help="merged trace to write (Chrome/Perfetto JSON)")
    args = parser.parse_args(argv)
    try:
        summary = merge_traces(args.folder, args.output)
    except (MergeError, OSError) as e:
        print(f"npudist.profiler merge: {e}", file=sys.stderr)
        return 2
    print(f"wrote {args.output}: ranks {summary['ranks']}, {summary['events']} events")
    return 0


if __name__ == "__main__":
    sys.exit(main())
