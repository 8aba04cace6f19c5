"""Parquet io: atomic writes, and damaged inputs reported by file name."""

import json

import numpy as np
import pytest
import yaml
from conftest import PYTHON, run
from hypothesis import given, settings
from hypothesis import strategies as st

from rlvr import io, runlock


def test_write_is_atomic_and_leaves_no_temporary(tmp_path):
    path = tmp_path / "sub" / "x.parquet"
    io.write_table(path, {"a": np.arange(3), "b": ["x", "y", "z"]})
    assert sorted(p.name for p in path.parent.iterdir()) == ["x.parquet"]
    assert io.read_table(path)["a"].tolist() == [0, 1, 2]


def test_failed_write_keeps_the_old_file(tmp_path):
    path = tmp_path / "x.parquet"
    io.write_table(path, {"a": np.arange(3)})
    with pytest.raises(ValueError):  # pyarrow's ArrowInvalid: columns of unequal lengths
        io.write_table(path, {"a": np.arange(3), "b": np.arange(4)})
    assert io.read_table(path)["a"].tolist() == [0, 1, 2]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["x.parquet"]


def test_truncated_file_names_the_file(tmp_path):
    path = tmp_path / "task.parquet"
    io.write_table(path, {"a": np.arange(1000)})
    path.write_bytes(path.read_bytes()[:100])
    with pytest.raises(io.InputError, match=r"task\.parquet: not a readable Parquet file.*delete it"):
        io.read_table(path)


def test_missing_columns_and_files_are_named(tmp_path):
    path = tmp_path / "t.parquet"
    io.write_table(path, {"a": np.arange(2)})
    with pytest.raises(io.InputError, match=r"t\.parquet: missing columns \['level'\]"):
        io.read_table(path, required=("a", "level"))
    with pytest.raises(io.InputError, match="nothere.parquet: file not found"):
        io.read_table(tmp_path / "nothere.parquet")


def test_aggregate_refuses_mismatched_schemas(tmp_path):
    a, b = tmp_path / "a.parquet", tmp_path / "b.parquet"
    io.write_table(a, {"x": np.arange(2)})
    io.write_table(b, {"y": np.arange(2)})
    with pytest.raises(io.InputError, match="b.parquet: columns"):
        io.concat_files([a, b], tmp_path / "out.parquet")
    assert not (tmp_path / "out.parquet").exists()


def test_cli_reports_a_damaged_task_without_a_traceback(tmp_path):
    task = tmp_path / "task.parquet"
    task.write_bytes(b"PAR1 not really")
    spec = json.dumps({"k": [1], "n_samples": 8, "seed": 0})
    proc = run([PYTHON, "-m", "rlvr", "reference", "--spec", spec, "--task", str(task),
                "--out", str(tmp_path / "ref.parquet")], check=False)
    assert proc.returncode == 2
    assert "task.parquet: not a readable Parquet file" in proc.stderr
    assert "Traceback" not in proc.stderr
    assert not (tmp_path / "ref.parquet").exists()


def test_compute_jobs_import_neither_pandas_nor_matplotlib_nor_snakemake(tmp_path):
    from conftest import REPO

    from rlvr import specs
    from rlvr.config import gradstat_jobs, train_rows, validate_config

    cfg = validate_config(yaml.safe_load((REPO / "config" / "test.yaml").read_text()))
    row = specs.to_json(next(r for r in train_rows(cfg) if r.method == "grpo"))
    job = specs.to_json(gradstat_jobs(cfg)[0])
    t = str(tmp_path / "task.parquet")
    code = (
        "import sys\n"
        "from rlvr.cli import main\n"
        f"assert main(['task', '--spec', {json.dumps(cfg['task'])!r}, '--out', {t!r}]) == 0\n"
        f"assert main(['train', '--spec', {row!r}, '--task', {t!r}, '--results', {str(tmp_path)!r}]) == 0\n"
        f"assert main(['gradstats', '--spec', {job!r}, '--task', {t!r},"
        f" '--out', {str(tmp_path / 'g.parquet')!r}]) == 0\n"
        "heavy = sorted({m.split('.')[0] for m in sys.modules} & {'pandas', 'matplotlib', 'snakemake'})\n"
        "print('HEAVY', heavy)\n"
    )
    out = run([PYTHON, "-c", code]).stdout
    assert "HEAVY []" in out


@pytest.mark.slow
def test_a_flipped_bit_anywhere_is_refused_or_changes_nothing_read(tmp_path):
    """Bits 0, 3 and 6 of every byte of a small file flipped in turn: the read either refuses the file,
    naming it (a page checksum, the content hash, or an unreadable footer), or returns the same table;
    never a silently different one."""
    path, damaged = tmp_path / "t.parquet", tmp_path / "damaged.parquet"
    table = io.write_table(path, {"x": np.linspace(0, 1, 7), "name": list("abcdefg"), "k": np.arange(7)})
    data = path.read_bytes()
    refused = 0
    for pos in range(len(data)):
        for bit in (0, 3, 6):
            flipped = bytearray(data)
            flipped[pos] ^= 1 << bit
            damaged.write_bytes(flipped)
            try:
                assert io.read_arrow(damaged).equals(table), (pos, bit)
            except io.InputError as err:
                assert str(damaged) in str(err) and "delete it and rerun" in str(err)
                refused += 1
    assert refused > 0.5 * 3 * len(data)  # the rest fall in bytes no reader uses (file metadata)


def test_a_file_without_a_checksum_is_refused(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    pq.write_table(pa.table({"x": [1.0]}), tmp_path / "foreign.parquet")
    with pytest.raises(io.InputError, match="foreign.parquet: has no rlvr checksum"):
        io.read_arrow(tmp_path / "foreign.parquet")


def _hash_as_first_written(table):
    """content_hash as rlvr first defined it (every stored rlvr_sha256 was made so): numeric and
    boolean columns as numpy bytes, any other as str(value) joined by NUL, in UTF-8."""
    import hashlib

    h = hashlib.sha256()
    for field, column in zip(table.schema, table.columns):
        h.update(f"{field.name}\0{field.type}\0".encode())
        values = column.to_numpy(zero_copy_only=False)
        h.update(values.tobytes() if values.dtype.kind in "biuf" else "\0".join(map(str, values)).encode())
    return h.hexdigest()


@given(st.lists(st.lists(st.text(), max_size=5), min_size=1, max_size=4), st.booleans(), st.integers(0, 2))
@settings(max_examples=200, deadline=None)
def test_the_content_hash_reads_strings_from_arrow_as_it_first_did_through_python(chunks, large, cut):
    """content_hash joins string columns from Arrow's buffers (fast); its bytes are the ones the
    first definition hashed, for any text, chunking, slicing or string type, and with nulls."""
    import pyarrow as pa

    kind = pa.large_string() if large else pa.string()
    strings = pa.chunked_array([pa.array(c, kind).slice(min(cut, len(c))) for c in chunks], kind)
    with_nulls = pa.chunked_array([pa.array(["a", None, "b"], kind)])
    for table in (pa.table({"s": strings, "x": np.arange(len(strings), dtype=float)}),
                  pa.table({"s": with_nulls, "i": [1, None, 3], "b": [True, False, True]})):
        assert io.content_hash(table) == _hash_as_first_written(table)


def test_a_list_column_is_hashed_by_every_value_and_reads_back(tmp_path):
    """The network's base is a tensor a row (rlvr/net/base.py): its file reads back with its
    checksum, and a value changed anywhere in a long list changes the hash (str() of a numpy
    array would elide its middle)."""
    import pyarrow as pa

    values = [np.arange(5000, dtype=np.float32), np.ones(3, np.float32)]
    table = io.write_table(tmp_path / "base.parquet", {"name": ["w", "b"], "shape": [[50, 100], [3]],
                                                        "value": values}, io.bound("base", "0" * 32))
    assert io.content_hash(io.read_arrow(tmp_path / "base.parquet")) == io.content_hash(table)
    changed = [values[0].copy(), values[1]]
    changed[0][2500] += 1
    assert io.content_hash(pa.table({"name": ["w", "b"], "shape": [[50, 100], [3]], "value": changed})) \
        != io.content_hash(table)
    regrouped = [values[0][:4999], np.concatenate([values[0][4999:], values[1]])]  # the same flat values
    assert io.content_hash(pa.table({"name": ["w", "b"], "shape": [[50, 100], [3]], "value": regrouped})) \
        != io.content_hash(table)


def test_a_dead_or_zombie_writers_temporary_is_removed_and_a_living_ones_kept(tmp_path):
    """A killed job leaves `.name.<pid>.tmp`; its writer may linger as a zombie (an init that does
    not reap), which kill(pid, 0) still finds: only a writer that will go on keeps its file."""
    import os
    import subprocess
    import time
    from pathlib import Path

    dead = subprocess.Popen(["true"])
    dead.wait()
    zombie = subprocess.Popen(["true"])  # ended, not yet reaped
    state = Path(f"/proc/{zombie.pid}/stat")
    t0 = time.monotonic()
    while state.read_text().rsplit(")", 1)[1].split()[0] != "Z":
        assert time.monotonic() - t0 < 30, "the child never became a zombie"
        time.sleep(0.01)
    try:
        (tmp_path / "sub").mkdir()
        files = {who: tmp_path / "sub" / f".x.parquet.{pid}.tmp"
                 for who, pid in [("dead", dead.pid), ("zombie", zombie.pid), ("living", os.getpid())]}
        for f in files.values():
            f.write_bytes(b"partial")
        other = tmp_path / ".notes.tmp"  # not a writer's name: never touched
        other.write_bytes(b"mine")
        io.remove_stale_temporaries(tmp_path)
        assert sorted(p.name for p in tmp_path.rglob("*.tmp")) == [other.name, files["living"].name]
    finally:
        zombie.wait()


def test_disk_full_is_a_plain_message_and_leaves_the_old_file(tmp_path, monkeypatch, capsys):
    """Issue 23: disk-full and permission errors were raw tracebacks (nothing partial, no message)."""
    import errno
    import os

    from rlvr import config as C
    from rlvr.cli import main

    out = tmp_path / "task.parquet"
    out.write_bytes(b"the old file")

    def full(*args):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(out))

    monkeypatch.setattr(io.os, "replace", full)  # the last step of every write
    assert main(["task", "--spec", json.dumps(C.validate_config({})["task"]), "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"rlvr task: error: {out}: No space left on device; nothing was left half-written")
    assert out.read_bytes() == b"the old file"
    assert [p.name for p in tmp_path.iterdir()] == ["task.parquet"]


def test_a_symlink_at_the_temporarys_name_is_left_untouched_and_the_write_succeeds(tmp_path):
    """Issue 33: the temporary was opened with open(tmp, "wb"): a symlink planted at its name had
    its target overwritten, and the result became a symlink to it. A symlink under a dead
    writer's temporary name is not removed as a stale temporary either."""
    import os
    import subprocess

    dead = subprocess.Popen(["true"])
    dead.wait()
    victim = tmp_path / "victim"
    victim.write_bytes(b"not yours")
    out = tmp_path / "x.parquet"
    planted = [tmp_path / f".x.parquet.{pid}.tmp" for pid in (os.getpid(), dead.pid)]
    for link in planted:
        link.symlink_to(victim)
    io.write_bytes(out, b"new")
    assert out.read_bytes() == b"new" and not out.is_symlink()
    assert victim.read_bytes() == b"not yours"
    assert all(link.is_symlink() and os.readlink(link) == str(victim) for link in planted)
    names = sorted(p.name for p in tmp_path.iterdir())
    assert names == sorted(["victim", "x.parquet", *(p.name for p in planted)])


@pytest.mark.parametrize("call, code", [("write", "ENOSPC"), ("fsync", "EIO"), ("open", "EACCES"),
                                        ("replace", "EROFS")])
def test_a_failed_write_names_the_final_file_and_leaves_the_old_one(tmp_path, monkeypatch, capsys, call,
                                                                    code):
    """Issue 33: disk full said `No space left on device` without naming the file. Whichever
    step fails, the error names the file asked for, the old file stays and no temporary is left."""
    import errno
    import os

    from rlvr.cli import main

    out = tmp_path / "task.parquet"
    out.write_bytes(b"the old file")
    number = getattr(errno, code)

    real = getattr(os, call)

    def fail(*args, **kwargs):
        if call == "open" and not str(args[0]).endswith(".tmp"):  # only the temporary's creation
            return real(*args, **kwargs)
        raise OSError(number, os.strerror(number))  # as the kernel says it: no file name

    monkeypatch.chdir(tmp_path)  # no run's lock files here (rlvr/runlock.py looks in .snakemake/)
    for name in (runlock.TOKEN_ENV, runlock.STATE_ENV):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(io.os, call, fail)
    assert main(["task", "--spec", json.dumps(_task_spec()), "--out", str(out)]) == 2
    monkeypatch.undo()
    err = capsys.readouterr().err
    assert f"rlvr task: error: {out}: {os.strerror(number)}" in err, err
    assert "nothing was left half-written" in err
    assert out.read_bytes() == b"the old file"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["task.parquet"]


def _task_spec():
    from rlvr import config as C

    return dict(C.validate_config({})["task"], P=8, M=4)


@pytest.mark.slow
def test_a_spec_beyond_the_argument_limit_reaches_its_job_on_stdin(tmp_path):
    """Issue 23: ~24,000 seeds made the train command fail with 'Argument list too long' (one
    argument is limited to 128 KiB); the rules now pass specs on stdin."""
    import subprocess

    from rlvr import config as C
    from rlvr.specs import TrainRow, to_json

    task = tmp_path / "task.parquet"
    run([PYTHON, "-m", "rlvr", "task", "--spec", json.dumps(dict(C.validate_config({})["task"], P=8, M=4)),
         "--out", str(task)])
    seeds = tuple(10**17 + i for i in range(7_000))  # long seeds: a long spec, few runs to train
    row = TrainRow(experiment="training", method="grpo", lr=2.0, reward_offset=0.0, G=2, prompts_per_step=1,
                   steps=1, max_rounds=0, seeds=seeds, value_lr=0.2, eval_every=1, k=(1,))
    spec = to_json(row)
    assert len(spec) > 128 * 1024
    subprocess.run([PYTHON, "-m", "rlvr", "train", "--spec", "-", "--task", str(task),
                    "--results", str(tmp_path)], input=spec, text=True, check=True, capture_output=True)
    assert io.read_table(tmp_path / f"{row.path}.run.parquet")["seed"].tolist() == list(seeds)


def test_a_file_written_before_a_knob_existed_is_read_with_the_knob_at_its_default():
    """A knob appended to rlvr/knobs.py at its default retrains nothing, so an aggregate may join
    old files without its column and new ones with it: the old rows get the default, in the new
    files' column order; a missing column that is no knob is still refused by name."""
    import pyarrow as pa

    new = pa.table({"method": ["grpo"], "kl_beta": [0.5], "seed": [1], "pass1": [0.3]})
    old = pa.table({"method": ["rloo"], "seed": [0], "pass1": [0.2]})
    joined = io.concat_tables([old, new], ["old.parquet", "new.parquet"])
    assert joined.column_names == new.column_names
    assert joined.column("kl_beta").to_pylist() == [0.0, 0.5]
    with pytest.raises(io.InputError, match=r"parquet: columns .* differ from"):
        io.concat_tables([old.drop_columns(["pass1"]), new], ["old.parquet", "new.parquet"])
