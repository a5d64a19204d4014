#!/usr/bin/env bash
# npudist's developer entry point; the README's two commands call it.
#
#   ./run.sh setup          create .venv, install what running needs (pyproject.toml), build the extension
#   ./run.sh build          rebuild the C++ extension now (safe while tests run)
#   ./run.sh demo [ARGS]    setup, then run the flagship job (npurun --nproc 4 examples/train_gpt.py)
#   ./run.sh test [ARGS]    setup + the test extra, then run the test suite (pytest ARGS; --full adds slow tiers)
#   ./run.sh lint [ARGS]    (+ the lint extra) ruff check (pyproject.toml [tool.ruff]) and clang-format
#                           --dry-run on csrc/ and tests/cpp/ (.clang-format); CI runs it before the tests
#   ./run.sh format         apply ruff's fixes and clang-format to the tree
#   ./run.sh bench NAME     setup + the test extra, then run benchmarks/NAME.py
#
# Running it again does not reinstall or rebuild when nothing changed: the
# dependency list and the build inputs (csrc/, setup.py, pyproject.toml, the
# torch version) are hashed into stamps under .venv/.
set -euo pipefail
cd "$(dirname "$0")"

VENV=${NPUDIST_VENV:-.venv}
PY="$VENV/bin/python"
# Every dependency is listed once, in pyproject.toml: [build-system].requires and
# [project].dependencies for setup, build and demo; [project.optional-dependencies] test
# (./run.sh test) and lint (./run.sh lint/format). deps GROUP prints one group, one per line.
deps() {
  "$PY" - "$1" <<'PYEOF'
import sys
try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10: the same parser, from PyPI (installed by setup)
    import tomli as tomllib
with open("pyproject.toml", "rb") as f:
    meta = tomllib.load(f)
group = sys.argv[1]
if group == "run":
    names = meta["build-system"]["requires"] + meta["project"]["dependencies"]
else:
    # with the running set, so that pip cannot move the pinned torch or numpy for a test library
    names = meta["project"]["optional-dependencies"][group] + meta["project"]["dependencies"]
print("\n".join(dict.fromkeys(names)))
PYEOF
}

log() { echo "[run.sh] $*" >&2; }

# Builds into build/ and then renames the library into npudist/: a process that
# has the old one mapped keeps it, and one starting meanwhile never sees a
# missing or half-written file. A lock keeps two builds from racing.
# install_group GROUP: pip-installs one dependency group of pyproject.toml (see deps) unless the
# stamp .venv/.deps-GROUP says this exact list is installed already.
install_group() {
  local list hash stamp="$VENV/.deps-$1"
  list=$(deps "$1")
  hash=$(echo "$list" | sha256sum | cut -c1-16)
  [ "$(cat "$stamp" 2>/dev/null)" = "$hash" ] && return 0
  log "installing the $1 dependencies (pyproject.toml): $(echo "$list" | tr '\n' ' ')"
  # shellcheck disable=SC2046
  # --no-build-isolation: a source package (DeepSpeed, in "full") builds against the pinned torch
  # instead of letting pip resolve its own
  echo "$list" | xargs -d '\n' "$PY" -m pip install -q --disable-pip-version-check --no-build-isolation
  echo "$hash" >"$stamp"
}

# xdist_args PYTEST_ARGS: the tier runs on NPUDIST_TEST_WORKERS (default 2) pytest-xdist workers, each
# taking whole test files (--dist loadfile: a module's fixtures are built once, on one worker). Half of
# the tier's time is waiting (ranks rendezvousing, timeouts being detected, processes starting), so a
# second worker fills it. Serial (nothing printed) when NPUDIST_TEST_WORKERS=0 or the arguments choose
# for themselves (-n/--numprocesses/--dist, -p no:xdist, --pdb, which xdist cannot serve).
xdist_args() {
  local workers=${NPUDIST_TEST_WORKERS:-2} arg
  [[ "$workers" =~ ^[0-9]+$ ]] || { log "NPUDIST_TEST_WORKERS=$workers: expected a number of workers (0 = serial)"; exit 2; }
  [ "$workers" -eq 0 ] && return 0
  for arg in "$@"; do
    case "$arg" in -n | -n* | --numprocesses* | --dist* | no:xdist | --pdb | --trace) return 0 ;; esac
  done
  echo "-n $workers --dist loadfile"
}

build_extension() {
  log "building the C++ extension (incremental, ninja)"
  mkdir -p build
  exec 9>build/.build-lock
  flock 9
  # ccache caches units built with a precompiled header only with this sloppiness (setup.py adds
  # -fpch-preprocess); without ccache it changes nothing.
  CCACHE_SLOPPINESS=${CCACHE_SLOPPINESS:-pch_defines,time_macros} \
    TORCH_DEVICE_BACKEND_AUTOLOAD=0 MAX_JOBS=${MAX_JOBS:-2} "$PY" setup.py -q build_ext --build-lib build/ext >/dev/null
  local built
  built=$(ls build/ext/npudist/_C*.so)
  cp "$built" "npudist/.$(basename "$built").new"
  mv -f "npudist/.$(basename "$built").new" "npudist/$(basename "$built")"
  flock -u 9
}

setup() {
  if [ ! -x "$PY" ]; then
    log "creating $VENV"
    python3 -m venv "$VENV"
  fi
  "$PY" -c 'import sys; sys.exit(sys.version_info < (3, 11))' || "$PY" -c 'import tomli' 2>/dev/null ||
    "$PY" -m pip install -q --disable-pip-version-check tomli
  install_group run
  local meta_hash build_hash torch_version
  torch_version=$("$PY" -c "import importlib.metadata as m; print(m.version('torch'))")
  meta_hash=$(cat pyproject.toml setup.py | sha256sum | cut -c1-16)
  build_hash=$( (find csrc -type f | sort | xargs cat; cat setup.py csrc_unity.py csrc_includes.py pyproject.toml; echo "$torch_version") | sha256sum | cut -c1-16)
  if [ "$(cat "$VENV/.meta-stamp" 2>/dev/null)" != "$meta_hash" ]; then
    log "installing npudist (editable, no build isolation: keeps the pinned torch)"
    NPUDIST_SKIP_EXT_BUILD=1 "$PY" -m pip install -q --disable-pip-version-check --no-build-isolation --no-deps -e .
    echo "$meta_hash" >"$VENV/.meta-stamp"
  fi
  # `import torch_npu` as a script's first import needs npudist's finder installed at interpreter
  # start: a wheel install puts npudist-torch-npu.pth in site-packages (setup.py data_files);
  # setuptools' editable install drops data files, so copy it (docs/torch_npu_compat.md).
  local purelib
  purelib=$("$PY" -c 'import sysconfig; print(sysconfig.get_path("purelib"))')
  cmp -s npudist-torch-npu.pth "$purelib/npudist-torch-npu.pth" || cp npudist-torch-npu.pth "$purelib/"
  if [ "$(cat "$VENV/.build-stamp" 2>/dev/null)" != "$build_hash" ] || ! ls npudist/_C*.so >/dev/null 2>&1; then
    build_extension
    echo "$build_hash" >"$VENV/.build-stamp"
  fi
}

# The metrics tests start a real Prometheus server (tests/watchdog, docs/metrics.md): Debian's
# package, installed once when missing (root, or sudo without a password); otherwise the test
# fails naming this command.
PROMETHEUS_INSTALL="apt-get update && apt-get install -y --no-install-recommends prometheus"
ensure_prometheus() {
  command -v prometheus >/dev/null 2>&1 && return 0
  command -v apt-get >/dev/null 2>&1 || { log "prometheus not found and no apt-get: install Prometheus >= 2.x"; return 0; }
  local sudo=""
  if [ "$(id -u)" != 0 ]; then
    if command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then sudo="sudo -n"; else
      log "prometheus not found: install it with: $PROMETHEUS_INSTALL"; return 0
    fi
  fi
  log "installing prometheus (Debian package) for the metrics tests"
  $sudo apt-get update -qq >/dev/null && DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq \
    --no-install-recommends prometheus >/dev/null || log "installing prometheus failed: run $PROMETHEUS_INSTALL"
}

cpp_sources() { find csrc tests/cpp \( -name '*.cpp' -o -name '*.h' \) -print0; }

cmd=${1:-help}
shift || true
case "$cmd" in
  setup) setup ;;
  build)
    setup
    build_extension
    ;;
  demo)
    setup
    # the flagship job: a GPT trained with FSDP2 on 4 npus (docs/training.md); Ctrl-C saves a
    # checkpoint, running the demo again resumes from it (--no-resume starts over). Steps 10-11 are
    # profiled with step traces, from which the planner then predicts the same job on one Atlas 800T A2
    # node (docs/plan.md)
    prof=checkpoints/demo/profile
    rm -rf "$prof"
    "$PY" -m npurun --nproc 4 --profile "$prof" --profile-steps 10:12 examples/train_gpt.py \
      --ckpt-dir checkpoints/demo "$@" || exit $?
    if [ -d "$prof/steptrace" ]; then
      echo "[run.sh] the planner: this job on one Atlas 800T A2 node (python -m npudist.plan predict $prof --hardware atlas800t-a2)"
      "$PY" -m npudist.plan predict "$prof" --hardware atlas800t-a2 | grep -E '^(step time|tokens/s per npu|peak memory)'
    fi
    ;;
  test)
    setup
    install_group test
    # the full tier also runs the trainer libraries (DeepSpeed, Accelerate: tests/compat)
    case " $* " in *" --full "*) install_group full ;; esac
    ensure_prometheus
    exec "$PY" -m pytest $(xdist_args "$@") "$@"
    ;;
  lint)
    setup
    install_group lint
    "$VENV/bin/ruff" check "$@" .
    cpp_sources | xargs -0 "$VENV/bin/clang-format" --dry-run --Werror
    ;;
  format)
    setup
    install_group lint
    "$VENV/bin/ruff" check --fix .
    cpp_sources | xargs -0 "$VENV/bin/clang-format" -i
    ;;
  bench)
    setup
    install_group test  # some benchmarks drive test suites (array_api_conformance, cupy_conformance)
    name=${1:?usage: ./run.sh bench NAME [ARGS]}
    shift
    exec "$PY" "benchmarks/$name.py" "$@"
    ;;
  *)
    sed -n '2,16p' "$0"
    exit 2
    ;;
esac
