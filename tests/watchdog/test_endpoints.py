"""A rank's own endpoint: start_http_server, NPUDIST_METRICS_PORT/ADDR autostart, npurun's flags."""
import os
import socket
import subprocess
import sys
import time
import urllib.request

import pytest

import npudist.watchdog.metrics as metrics
from npudist.testing.multiproc import free_port, run_python

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def get(url):
    with urllib.request.urlopen(url, timeout=30) as r:
        return r.read().decode()


def test_start_http_server_serves_registry_on_loopback(monkeypatch):
    monkeypatch.delenv("NPUDIST_METRICS_ADDR", raising=False)
    metrics.record_step(0.5, 64)
    s = metrics.start_http_server(0)
    try:
        assert s.addr == "127.0.0.1" and s.port > 0
        assert s.url == f"http://127.0.0.1:{s.port}/metrics"
        text = get(s.url)
        assert "npudist_train_steps_total{" in text and "npudist_process_resident_memory_bytes{" in text
        assert "# TYPE npudist_train_step_seconds histogram" in text
        # prometheus_client's own default collectors are not mixed in: every series has our labels
        assert "\nprocess_cpu_seconds_total" not in text and "python_gc" not in text
    finally:
        s.stop()
    with pytest.raises(OSError):
        get(s.url)
    # the public names stay functions once the submodules are imported
    from npudist.watchdog.metrics import registry, start_http_server
    assert callable(registry) and callable(start_http_server)
    assert registry() is metrics.registry()


def test_start_http_server_addr_from_env(monkeypatch):
    monkeypatch.setenv("NPUDIST_METRICS_ADDR", "0.0.0.0")
    s = metrics.start_http_server(0)
    try:
        assert s.addr == "0.0.0.0"
        assert "npudist_process_cpu_seconds_total" in get(f"http://127.0.0.1:{s.port}/metrics")
    finally:
        s.stop()


@pytest.mark.parametrize("kwargs, words", [
    (dict(port=70000), "expected a TCP port number"), (dict(port="x"), "expected a TCP port number"),
    (dict(port=0, addr="not an address"), "neither an IP address nor a host name"),
    (dict(port=0, addr=""), "expected an address"),
])
def test_start_http_server_bad_input(kwargs, words):
    with pytest.raises(ValueError, match=words):
        metrics.start_http_server(**kwargs)


def test_start_http_server_port_in_use():
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        held.listen()
        port = held.getsockname()[1]
        with pytest.raises(OSError, match=f"cannot serve on 127.0.0.1:{port}.*pick another port"):
            metrics.start_http_server(port)


_AUTOSTART = r"""
import os, subprocess, sys, urllib.request
import torch  # autoload imports npudist, which starts the endpoint
from npudist.watchdog.metrics import server
ports = [s.port for s in server.servers()]
print("PORTS", ports, os.environ.get("NPUDIST_METRICS_SERVER_PID") == str(os.getpid()))
if ports:
    text = urllib.request.urlopen(f"http://127.0.0.1:{ports[0]}/metrics", timeout=30).read().decode()
    print("LABELS", 'rank="2"' in text and 'local_rank="1"' in text and 'host="hX"' in text)
    # a process the rank starts inherits the variables but does not serve
    child = subprocess.run([sys.executable, "-c", "import torch; from npudist.watchdog.metrics import server; "
                            "print(len(server.servers()))"], capture_output=True, text=True)
    print("CHILD", child.stdout.strip())
"""


def _run(env_extra):
    # one process under the harness's environment policy (no inherited NPUDIST_/RANK variables),
    # forked warm: torch's backend autoload runs in it and imports npudist, which starts the endpoint
    return run_python(["-c", _AUTOSTART], env=env_extra, timeout=180)


@pytest.mark.timeout(400)
def test_autostart_from_env():
    base = free_port()
    r = _run({"NPUDIST_METRICS_PORT": str(base), "RANK": "2", "LOCAL_RANK": "1", "NPUDIST_HOSTNAME": "hX"})
    assert r.returncode == 0, r.stderr
    assert f"PORTS [{base + 1}] True" in r.stdout, r.stdout + r.stderr  # base + LOCAL_RANK
    assert "LABELS True" in r.stdout and "CHILD 0" in r.stdout, r.stdout + r.stderr


@pytest.fixture
def clean_metrics_env(monkeypatch):
    for key in ("RANK", "LOCAL_RANK", "NPUDIST_METRICS_PORT", "NPUDIST_METRICS_DIR", "NPUDIST_METRICS_ADDR"):
        monkeypatch.delenv(key, raising=False)
    monkeypatch.setenv("NPUDIST_METRICS_SERVER_PID", "")  # restored (unset) after the test
    return monkeypatch


def test_autostart_only_in_ranks(clean_metrics_env):
    from npudist.watchdog.metrics import autostart
    clean_metrics_env.setenv("NPUDIST_METRICS_PORT", "0")
    assert autostart.from_env() == []  # not a rank (no RANK/LOCAL_RANK): e.g. npurun itself
    clean_metrics_env.setenv("NPUDIST_METRICS_SERVER_PID", "1")  # a child of the serving rank
    clean_metrics_env.setenv("RANK", "0")
    assert autostart.from_env() == []


def test_autostart_malformed_value_warns(clean_metrics_env, capsys):
    from npudist.watchdog.metrics import autostart
    clean_metrics_env.setenv("RANK", "0")
    clean_metrics_env.setenv("NPUDIST_METRICS_PORT", "ninety")
    assert autostart.from_env() == []
    err = capsys.readouterr().err
    assert "npudist.watchdog: warning: NPUDIST_METRICS_PORT='ninety' is not valid: expected an integer from 0 to 65535" in err
    clean_metrics_env.setenv("NPUDIST_METRICS_PORT", "0")
    clean_metrics_env.setenv("NPUDIST_METRICS_ADDR", "a b")
    assert autostart.from_env() == []
    assert "NPUDIST_METRICS_ADDR: 'a b' is neither an IP address nor a host name" in capsys.readouterr().err


def test_autostart_announces_for_npurun(clean_metrics_env, tmp_path):
    from npudist.watchdog.metrics import announce, autostart
    clean_metrics_env.setenv("RANK", "4")
    clean_metrics_env.setenv("LOCAL_RANK", "0")
    clean_metrics_env.setenv("NPUDIST_METRICS_DIR", str(tmp_path))
    started = autostart.from_env()
    try:
        assert len(started) == 1 and started[0].addr == "127.0.0.1"
        record = announce.read(str(tmp_path))[os.getpid()]
        assert record["port"] == started[0].port and record["rank"] == "4" and record["local_rank"] == "0"
        assert 'rank="4"' in get(started[0].url)
        assert os.environ["NPUDIST_METRICS_SERVER_PID"] == str(os.getpid())
    finally:
        for srv in started:
            srv.stop()


def _main(capsys, argv):
    from npurun import cli
    try:
        code = cli.main(argv)
    except SystemExit as e:
        code = e.code
    out = capsys.readouterr()
    return code, out.out, out.err


def test_npurun_metrics_flags_dry_run_and_errors(capsys, monkeypatch):
    for key in [k for k in os.environ if k.startswith("PET_")]:
        monkeypatch.delenv(key)
    worker = os.path.join(REPO, "tests", "watchdog", "workers", "train_loop.py")
    code, out, err = _main(capsys, ["--nproc", "2", "--metrics-port", "9400", "--metrics-addr", "0.0.0.0",
                                    "--dry-run", worker, "x"])
    assert code == 0, err
    assert "metrics          : http://0.0.0.0:9400/metrics" in out
    assert "NPUDIST_METRICS_DIR=" in out
    code, out, err = _main(capsys, ["--nproc", "2", "--dry-run", worker, "x"])
    assert "metrics          : off" in out and "NPUDIST_METRICS_DIR" not in out
    for args, words in [(["--metrics-addr", "0.0.0.0"], "--metrics-addr needs --metrics-port"),
                        (["--metrics-linger", "5"], "--metrics-linger needs --metrics-port"),
                        (["--metrics-port", "70000"], "--metrics-port=70000: must be a port number"),
                        (["--metrics-port", "0", "--metrics-linger", "-1"], "--metrics-linger=-1.0: must be >= 0"),
                        (["--metrics-port", "0", "--metrics-addr", "a b"], "neither an IP address")]:
        code, out, err = _main(capsys, ["--nproc", "2", *args, "--dry-run", worker, "x"])
        assert code == 2 and words in err, (args, err)


@pytest.mark.timeout(300)
def test_npurun_metrics_port_in_use_is_a_clear_error():
    worker = os.path.join(REPO, "tests", "watchdog", "workers", "train_loop.py")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("NPUDIST_", "PET_"))}
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        held.listen()
        port = held.getsockname()[1]
        r = subprocess.run([sys.executable, "-m", "npurun", "--nproc", "2", "--metrics-port", str(port),
                            "--metrics-linger", "600", worker, "/nonexistent"], env=env, capture_output=True,
                           text=True, timeout=240, cwd=REPO)
    assert r.returncode != 0
    assert (f"npurun: job did not run: OSError: [Errno 98] --metrics-addr 127.0.0.1 --metrics-port {port}: "
            f"cannot serve metrics there") in r.stderr, r.stderr
    assert "[rank" not in r.stdout + r.stderr  # no rank was started


def test_forked_child_does_not_keep_the_endpoint():
    from npudist.watchdog.metrics import server
    s = metrics.start_http_server(0)
    port = s.port
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: no servers, its copy of the socket closed
        os.close(r)
        ok = server.servers() == [] and s._httpd is None
        os.write(w, b"1" if ok else b"0")
        os.close(w)
        time.sleep(5)  # still alive while the parent stops its endpoint
        os._exit(0)
    try:
        os.close(w)
        assert os.read(r, 1) == b"1"
        assert "npudist_process_cpu_seconds_total" in get(s.url)
        s.stop()
        with socket.socket() as again:  # the port is free although the child lives
            again.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # past the scrape's TIME_WAIT
            again.bind(("127.0.0.1", port))
            again.listen()
    finally:
        os.close(r)
        os.kill(pid, 9)
        os.waitpid(pid, 0)
