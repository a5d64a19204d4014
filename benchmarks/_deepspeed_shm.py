"""DeepSpeed's CPU shared-memory all_reduce, built at benchmark time.

The strongest shared-memory all_reduce on CPUs that users already run is
DeepSpeed's (`csrc/cpu/comm/shm.cpp`, reached through
`deepspeed.comm.inference_all_reduce`, which calls
`torch.ops.deepspeed.inference_all_reduce_` on cpu tensors). It is not
vendored: `build()` downloads the deepspeed sdist from PyPI with pip
(`pip download --no-deps deepspeed==0.19.8`), extracts the two sources and
compiles them with `torch.utils.cpp_extension.load` (-O2 -fopenmp, as
DeepSpeed's ShareMemCommBuilder does), caching the build under
`build/bench_deepspeed/` (git-ignored). Each rank then `load()`s the library
and, once every rank has, calls `initialize()` (DeepSpeed's `initialize(world,
rank)`; it uses the SHM path only when LOCAL_SIZE equals the world size, and
names its segments after MASTER_ADDR/MASTER_PORT); after a barrier each rank
`unlink_own()`s its segment name, as DeepSpeed leaves them in /dev/shm.
"""
import glob
import importlib.util
import os
import subprocess
import sys
import tarfile

VERSION = "0.19.8"
SOURCES = ("csrc/cpu/comm/shm_interface.cpp", "csrc/cpu/comm/shm.cpp", "csrc/cpu/comm/shm.h",
           "csrc/cpu/comm/x86_64/shm.h")
MODULE = "npudist_bench_deepspeed_shm"


def default_cache():
    return os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "build", "bench_deepspeed")


def build(cache_dir=None, version=VERSION):
    """Returns (path of the built library, None) or (None, why it failed)."""
    cache_dir = os.path.abspath(cache_dir or default_cache())
    src_dir = os.path.join(cache_dir, f"deepspeed-{version}")
    try:
        os.makedirs(cache_dir, exist_ok=True)
        if not all(os.path.exists(os.path.join(src_dir, s)) for s in SOURCES):
            sdists = glob.glob(os.path.join(cache_dir, f"deepspeed-{version}.tar.gz"))
            if not sdists:
                r = subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary", ":all:",
                                    "--disable-pip-version-check", f"deepspeed=={version}", "-d", cache_dir],
                                   capture_output=True, text=True,
                                   # DeepSpeed's setup.py picks an accelerator: with npudist installed it
                                   # sees torch.npu and its Ascend builder fails without ASCEND_HOME_PATH.
                                   env=dict(os.environ, DS_ACCELERATOR="cpu", TORCH_DEVICE_BACKEND_AUTOLOAD="0"))
                sdists = glob.glob(os.path.join(cache_dir, f"deepspeed-{version}.tar.gz"))
                if r.returncode != 0 or not sdists:
                    tail = (r.stderr or r.stdout).strip().splitlines()[-1:] or ["?"]
                    return None, f"pip download deepspeed=={version} failed: {tail[0]}"
            with tarfile.open(sdists[0]) as tar:
                members = [m for m in tar.getmembers()
                           if any(m.name == f"deepspeed-{version}/{s}" for s in SOURCES)]
                if len(members) != len(SOURCES):
                    return None, f"the deepspeed {version} sdist lacks {SOURCES}"
                tar.extractall(cache_dir, members=members, filter="data")
        comm = os.path.join(src_dir, "csrc", "cpu", "comm")
        build_dir = os.path.join(cache_dir, "build")
        os.makedirs(build_dir, exist_ok=True)
        from torch.utils import cpp_extension

        cpp_extension.load(name=MODULE, sources=[os.path.join(comm, "shm_interface.cpp"), os.path.join(comm, "shm.cpp")],
                           extra_cflags=["-O2", "-fopenmp"], extra_ldflags=["-fopenmp"], extra_include_paths=[comm],
                           build_directory=build_dir, verbose=False)
        libs = glob.glob(os.path.join(build_dir, f"{MODULE}*.so"))
        if not libs:
            return None, "the build produced no library"
        return libs[0], None
    except Exception as e:  # any build failure becomes the column's text
        msg = str(e).strip().splitlines()
        return None, f"build failed: {type(e).__name__}: {msg[-1] if msg else ''}"[:200]


def load(path):
    """Imports the built library in a rank; raises if this CPU cannot run it."""
    spec = importlib.util.spec_from_file_location(MODULE, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    if mod.vector_kernel_level() < 2:
        raise RuntimeError("this CPU lacks AVX-512BW, which DeepSpeed's shm kernels need")
    return mod


def initialize(mod, world, rank):
    """Sets up DeepSpeed's SHM workspace (every rank must call it: it waits, spinning, for
    the peers' segments, so call it only once every rank has loaded the library).
    Returns the all_reduce (in place, cpu tensors, SUM)."""
    import torch

    os.environ["LOCAL_SIZE"] = str(world)
    mod.initialize(world, rank)
    return torch.ops.deepspeed.inference_all_reduce_


def load_in_rank(path, world, rank):
    """load() then initialize(), for a single process (world 1)."""
    return initialize(load(path), world, rank)


def unlink_own(rank):
    """Removes this rank's segment name once every rank has mapped the peers' (the memory
    stays while mapped), so nothing is left in /dev/shm however the job ends."""
    name = (f"/dev/shm/deepspeed_allreduce_buffer_{os.getuid()}_{os.environ.get('MASTER_ADDR', '')}_"
            f"{os.environ.get('MASTER_PORT', '')}_{rank}")
    try:
        os.unlink(name)
    except OSError:
        pass


def cleanup(port):
    """Removes the segments DeepSpeed left in /dev/shm for the job on `port`."""
    for p in glob.glob(f"/dev/shm/deepspeed_allreduce_buffer_{os.getuid()}_*_{port}_*"):
        try:
            os.unlink(p)
        except OSError:
            pass


def join(world, rank, group):
    """Every rank of a multi-rank benchmark: loads the library named by NPUDIST_BENCH_DS_LIB
    (unless the parent set NPUDIST_BENCH_DS_ERROR), agrees over ``group`` (a gloo group) that all
    ranks could, then initialize()s and unlink_own()s. Returns (all_reduce or None, note): the
    note says why DeepSpeed's column is empty (all ranks or none run it: its setup spins until
    every peer's segment exists)."""
    import torch
    import torch.distributed as dist

    note = os.environ.get("NPUDIST_BENCH_DS_ERROR")
    if note:
        return None, note
    mod = None
    try:
        mod = load(os.environ["NPUDIST_BENCH_DS_LIB"])
    except Exception as e:  # the column says why
        note = f"{type(e).__name__}: {e}"[:200]
    ok = torch.tensor([int(mod is not None)])
    dist.all_reduce(ok, op=dist.ReduceOp.MIN, group=group)
    if not int(ok):
        return None, note or "DeepSpeed's library failed to load on another rank"
    all_reduce = initialize(mod, world, rank)
    dist.barrier(group=group)
    unlink_own(rank)
    return all_reduce, None
