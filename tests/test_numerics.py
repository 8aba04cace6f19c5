"""The same bits on every x86 CPU (rlvr/numerics.py): numpy and torch pick kernels by the CPU's
vector width, and this machine emulates narrower CPUs through the switches each library reads
(torch: ATEN_CPU_CAPABILITY default / avx2 / this CPU's own; numpy: NPY_DISABLE_CPU_FEATURES
without AVX-512, without AVX2 and AVX-512, or none). Every result file of a run, the toy's and a
micro network's, must hold the same bits under each; and the emulation must have teeth: without
rlvr's pin the same switches change torch's and numpy's bits.
"""

import os
import subprocess
import sys

import pyarrow.parquet as pq
import pytest
import yaml
from conftest import REPO, same_table

from rlvr import numerics

pytestmark = pytest.mark.skipif(not numerics.X86, reason="the pin and its emulation are x86-64's")

# what another CPU would run: (torch's kernels, numpy's paths switched off)
CPUS = {"generic": ("default", "X86_V3 X86_V4 AVX512_ICL AVX512_SPR"),
        "avx2": ("avx2", "X86_V4 AVX512_ICL AVX512_SPR"),
        "this CPU": (None, None)}
MICRO = {"enabled": True, "model": {"n_layer": 1, "d_model": 16, "n_head": 2},
         "base": {"steps": 20, "batch": 32}, "steps": 4, "prompts_per_step": 4, "G": 4, "eval_every": 2,
         "seeds": [0, 1], "rows": [{"method": ["grpo", "none"], "lr": 0.01}]}


def _env(cpu):
    env = {k: v for k, v in os.environ.items() if k not in numerics.VARIABLES}  # the suite's own pin too
    aten, npy = CPUS[cpu]
    env |= {"ATEN_CPU_CAPABILITY": aten} if aten else {}
    env |= {"NPY_DISABLE_CPU_FEATURES": npy} if npy else {}
    return env


# the toy demos kept beside the network: its kernel with a KL penalty, shared weights, a stale
# sampler and the exact gradient moments (the others run the same numpy code)
KEPT = ("reference", "gradient_stats", "kl_penalty", "shared_policy", "off_policy")


def test_a_run_has_the_same_bits_in_every_file_whatever_the_cpus_vector_width(tmp_path):
    from rlvr.demos import DEMOS

    cfg = yaml.safe_load((REPO / "config" / "test.yaml").read_text())
    off = {d.section: {**cfg.get(d.section, {}), "enabled": False} for d in DEMOS
           if d.section and d.section not in (*KEPT, "network")}
    config = tmp_path / "micro.yaml"
    config.write_text(yaml.safe_dump(cfg | off | {"network": MICRO}))
    files = {}
    for cpu in CPUS:
        out = tmp_path / cpu.replace(" ", "_")
        subprocess.run([sys.executable, "-m", "rlvr", "all", "--config", str(config), "--results", str(out)],
                       cwd=REPO, env=_env(cpu), check=True, capture_output=True, timeout=300)
        files[cpu] = {p.relative_to(out).as_posix(): p for p in out.rglob("*.parquet")}
    names = files["this CPU"]
    assert any(n.startswith("network/") for n in names) and "network/base_prompts.parquet" in names
    assert len(names) > 8 and all(files[cpu].keys() == names.keys() for cpu in CPUS)
    for cpu in ("generic", "avx2"):
        differ = [n for n in names if not same_table(pq.read_table(files[cpu][n]), pq.read_table(names[n]))]
        assert differ == [], f"{cpu}: {differ}"


UNPINNED = """
import hashlib, numpy as np, torch  # before rlvr: neither pinned
torch.set_num_threads(1)
g = torch.Generator().manual_seed(0)
x, w = torch.randn(64, 33, generator=g), torch.randn(33, 17, generator=g, requires_grad=True)
y = x @ w
(torch.log_softmax(y, -1) * torch.nn.functional.gelu(y)).sum().backward()
a = np.random.default_rng(0).normal(size=4099)
for v in (torch.nn.functional.layer_norm(y, (17,)).detach().numpy(), w.grad.numpy(), np.exp(a), np.tanh(a)):
    print(hashlib.sha256(v.tobytes()).hexdigest())
"""


def test_the_emulated_cpus_compute_other_bits_where_nothing_is_pinned():
    """The switches the test above sets do change torch's and numpy's kernels: a layer norm and a
    gradient, numpy's exp and tanh differ between the generic CPU and this one, imported before rlvr."""
    said = {cpu: subprocess.run([sys.executable, "-c", UNPINNED], env=_env(cpu), capture_output=True,
                                text=True, check=True, timeout=120).stdout.split()
            for cpu in ("generic", "this CPU")}
    (*torch_pairs, exp, tanh) = zip(said["generic"], said["this CPU"])
    assert all(a != b for a, b in torch_pairs)
    if numerics._cpu_has_avx2():  # numpy's dispatched paths exist to differ from only where the CPU has them
        assert exp[0] != exp[1] and tanh[0] != tanh[1]


def test_a_job_refuses_to_run_where_numpy_was_imported_before_rlvr(tmp_path):
    said = subprocess.run([sys.executable, "-c", "import numpy, rlvr.numerics as n; n.check('this job')"],
                          env=_env("this CPU"), capture_output=True, text=True, timeout=60)
    assert said.returncode != 0 and "this job would compute other bits" in said.stderr
    assert "numpy dispatches" in said.stderr and "Import rlvr before numpy" in said.stderr
    assert numerics.problems() == []  # the suite itself (tests/conftest.py imports rlvr first)
