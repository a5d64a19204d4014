"""examples/train_gpt.py --graphs (the training step replayed from an npu graph, 2 ranks under
npurun): the per-step loss matches the same replicated job run eagerly (--replicate) within
1e-5 relative over 10 steps."""
import pytest

from npudist.testing.npurun import run_npurun

pytestmark = pytest.mark.timeout(600)

TINY = ["--d-model", "64", "--n-layer", "2", "--n-head", "2", "--seq-len", "32", "--batch-size", "8",
        "--max-bytes", "400000", "--log-every", "5", "--ckpt-every", "0", "--warmup", "5", "--sample-len", "0",
        "--lr", "1e-2", "--mp", "fp32", "--steps", "10", "--no-resume"]


def run(mode, tmp_path):
    log = tmp_path / f"loss_{mode}.txt"
    p = run_npurun(["--nproc", "2", "examples/train_gpt.py", *TINY, f"--{mode}", "--ckpt-dir",
                    tmp_path / f"ckpt_{mode}", "--loss-log", log], timeout=500)
    assert p.returncode == 0, p.stdout[-4000:] + p.stderr[-4000:]
    return [float(line.split()[1]) for line in log.read_text().splitlines()]


def test_graphs_step_matches_eager(tmp_path):
    eager = run("replicate", tmp_path)
    graphs = run("graphs", tmp_path)
    assert len(eager) == len(graphs) == 10
    for step, (a, b) in enumerate(zip(eager, graphs), 1):
        assert abs(a - b) <= 1e-5 * abs(a), f"step {step}: eager {a} vs graphs {b}"
    assert graphs[-1] < graphs[0]  # it trains
