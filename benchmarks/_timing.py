"""The benchmarks' shared per-call timer."""
import time


def timed(fn, calls):
    """Mean wall time of one ``fn()`` over ``calls`` back-to-back calls, in seconds."""
    t0 = time.perf_counter()
    for _ in range(calls):
        fn()
    return (time.perf_counter() - t0) / calls
