"""The numeric platform: what numpy and torch dispatch on, pinned so that a result's bits do not
depend on the CPU it was computed on.

numpy and torch pick their kernels by the CPU's vector width: numpy's exp, log and reductions
take AVX-512 paths where the CPU has them, torch's elementwise kernels AVX-512 or AVX2, MKL (torch's
matrix products) its own branch per CPU vendor and width, and oneDNN its own. Each rounds
differently, and a training run amplifies the last bit, so the same config gave other numbers on
another machine (measured on one machine: a micro network's base and trained row came out three
ways under torch's three kernel choices, and the toy's runs two ways with and without numpy's
AVX-512 paths). Pinned here, in the environment, before numpy or torch is imported:

- numpy: its baseline kernels alone (`NPY_ENABLE_CPU_FEATURES` set to the baseline, no
  dispatched AVX2 or AVX-512 paths), which every CPU numpy runs on has;
- torch: its AVX2 kernels (`ATEN_CPU_CAPABILITY=avx2`; every x86-64 CPU since 2015 has AVX2 and
  FMA), MKL's reproducible SSE2 branch (`MKL_CBWR=COMPATIBLE`, the one branch MKL promises on
  every vendor's CPU) and no oneDNN (`pin_torch`, in the process).

`import rlvr` pins (this module imports nothing heavy), so a pipeline job, `python -m rlvr` and a
script that imports rlvr before numpy or torch all compute on the pinned platform; `check`
says whether this process does, and every pipeline job refuses to start unless it does. What
it costs: BENCHMARKS.md, "the pinned platform". The promise holds on x86-64; elsewhere
(an ARM Mac) numpy and torch run their own kernels and the bits are that machine's.
"""

import os
import platform
import sys

X86 = platform.machine().lower() in ("x86_64", "amd64")
NUMPY_BASELINE = "X86_V2"  # numpy >= 2.4's x86-64 baseline: every dispatched path above it is off
TORCH_CAPABILITY = "avx2"
MKL_BRANCH = "COMPATIBLE"
# the environment variables `pin` sets or clears: unset them all for this CPU's own kernels
VARIABLES = ("NPY_ENABLE_CPU_FEATURES", "NPY_DISABLE_CPU_FEATURES", "MKL_CBWR", "ATEN_CPU_CAPABILITY")


def _cpu_has_avx2():
    """Whether this CPU has AVX2 and FMA (torch's AVX2 kernels use both), from /proc/cpuinfo;
    None where that cannot be read (not Linux)."""
    try:
        with open("/proc/cpuinfo") as f:
            flags = next((line.split(":", 1)[1].split() for line in f if line.startswith("flags")), [])
    except OSError:
        return None
    return "avx2" in flags and "fma" in flags


def pin():
    """Set the environment that numpy and torch read at their import (see the module's text);
    a library already imported is left as it is (`check` tells). Whatever the environment said
    before is overridden: another CPU's kernels are exactly what a user's settings would emulate."""
    if not X86:
        return
    if "numpy" not in sys.modules:
        os.environ.pop("NPY_DISABLE_CPU_FEATURES", None)  # numpy refuses both at once
        os.environ["NPY_ENABLE_CPU_FEATURES"] = NUMPY_BASELINE
    if "torch" not in sys.modules:
        os.environ["MKL_CBWR"] = MKL_BRANCH
        if _cpu_has_avx2() is not False:  # forcing AVX2 on a CPU without it would crash
            os.environ["ATEN_CPU_CAPABILITY"] = TORCH_CAPABILITY


def pin_torch():
    """What torch sets in the process: one thread (a seed's bits the same alone or packed) and
    no oneDNN (its kernels choose their own vector width)."""
    import torch

    torch.set_num_threads(1)
    torch.backends.mkldnn.enabled = False


def problems():
    """What in this process is not the pinned platform, as sentences ([] where all is pinned):
    numpy's dispatched paths, and torch's kernels if torch is imported."""
    if not X86:
        return []
    out = []
    if "numpy" in sys.modules:
        from numpy._core._multiarray_umath import __cpu_features__

        on = [name for name in ("X86_V3", "X86_V4") if __cpu_features__.get(name)]
        if on:
            out.append(f"numpy dispatches {'/'.join(on)} kernels (numpy was imported before rlvr, or "
                       f"NPY_ENABLE_CPU_FEATURES is not {NUMPY_BASELINE})")
    if "torch" in sys.modules:
        import torch

        have = torch.backends.cpu.get_cpu_capability()
        if have != TORCH_CAPABILITY.upper():
            out.append(f"torch runs its {have} kernels, not {TORCH_CAPABILITY.upper()}"
                       + (" (this CPU has no AVX2)" if _cpu_has_avx2() is False else
                          " (torch was imported before rlvr)"))
        if os.environ.get("MKL_CBWR") != MKL_BRANCH:
            out.append(f"MKL_CBWR is {os.environ.get('MKL_CBWR')!r}, not {MKL_BRANCH!r}")
    return out


def check(what="this job"):
    """RuntimeError naming what is not pinned (see problems), else nothing."""
    wrong = problems()
    if wrong:
        raise RuntimeError(f"{what} would compute other bits than on another CPU: {'; '.join(wrong)}. "
                           "Import rlvr before numpy and torch (GUIDE.md, Determinism).")
