import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="session")
def default_results():
    """Every stage of the default config, computed in-process once: {name: pandas DataFrame}."""
    from rlvr.compute import compute_all
    from rlvr.config import load_config

    tables = compute_all(load_config(REPO / "config" / "config.yaml"))
    return {k: v.to_pandas() for k, v in tables.items()}


def run(cmd, cwd=None, check=True, timeout=300):
    """Run a command; return CompletedProcess with text output."""
    import subprocess

    proc = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=timeout)
    if check and proc.returncode != 0:
        raise AssertionError(f"{cmd} failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}")
    return proc


PYTHON = sys.executable


@pytest.fixture(scope="session")
def tiny_run(tmp_path_factory):
    """A completed pipeline run of config/test.yaml; tests may read it and dry-run it, not change it."""
    from test_pipeline import snakemake

    workdir = tmp_path_factory.mktemp("pipeline")
    out = snakemake(workdir, "-c2")
    (workdir / "logs" / "terminal.txt").write_text(out.stderr)  # what the user saw
    return workdir


def same_table(a, b):
    """Two pyarrow tables with the same schema and the same bits in every column (NaN where the
    other has NaN: pyarrow's own equals calls NaN unequal to itself)."""
    import numpy as np

    if a.schema != b.schema or a.num_rows != b.num_rows:
        return False
    for x, y in zip(a.columns, b.columns):
        x, y = x.to_numpy(zero_copy_only=False), y.to_numpy(zero_copy_only=False)
        if x.dtype.kind == "f":
            x, y = x.view(np.uint8), y.view(np.uint8)  # bit for bit
        if not np.array_equal(x, y):
            return False
    return True
