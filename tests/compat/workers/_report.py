"""Workers report observations as one ``RESULT <json>`` line per call; the test decides what is right."""
import json
import sys


def report(**values):
    print("RESULT " + json.dumps(values), flush=True)
    sys.stdout.flush()
