"""Parquet in and out, with pyarrow only.

Writes are atomic: a file appears under its final name complete or not at all, so a
killed job never leaves a partial result that a later run would trust. Reads check the
columns and turn any failure into an error that names the file.
"""

import errno
import glob
import os
import re
import stat
import sys
from pathlib import Path

from . import runlock

# every aggregated result: its name (tables, figures and the command line call it so) and the
# Parquet file under the results directory that holds it
RESULT_FILES = {
    "task": "task.parquet",
    "reference": "reference_passk.parquet",
    "gradstats": "gradient_stats.parquet",
    "exact": "exact_bias.parquet",
    "finite_step": "finite_step.parquet",  # demo 13's exact one-step outcomes (rlvr/finite_step.py)
    "runs": "runs.parquet",
    "curves": "curves.parquet",
    "passk": "passk_trained.parquet",
    "klgrad": "kl_gradients.parquet",
    # the network (issue 35, rlvr/net/): its base's exact P(correct) per prompt beside the toy's,
    # and its training jobs' files aggregated (rlvr/net/specs.py NET_FILES)
    "net_base": "network/base_prompts.parquet",
    "net_batches": "network_batches.parquet",
    "net_curves": "network_curves.parquet",
    "net_passk": "network_passk.parquet",
    "net_prompts": "network_prompts.parquet",
}
# the aggregated network results and the kind of the network training job's file each is made of
NET_PARTS = {"net_batches": "batch", "net_curves": "curve", "net_passk": "passk", "net_prompts": "prompts"}


# the aggregated results a training job writes its part of: the result's name and the kind of
# the job's file (rlvr/specs.py's JOB_FILES: {row path}_seeds{seeds}.{kind}.parquet)
JOB_PARTS = {"runs": "run", "curves": "curve", "passk": "passk", "klgrad": "klgrad"}


class InputError(RuntimeError):
    """An input file that is missing, unreadable or lacks expected columns."""


class _RefusePandas:
    """Meta-path finder that makes `import pandas` fail (see without_pandas)."""

    def find_spec(self, name, path=None, target=None):
        if name == "pandas" or name.startswith("pandas."):
            raise ImportError("rlvr compute jobs run without pandas")
        return None


def without_pandas():
    """Keep pyarrow from importing pandas (0.35 s) in a job that never needs it.

    pyarrow probes for pandas on its first array conversion or read; when the import
    fails it simply carries on without it. Call before any pyarrow work.
    """
    if "pandas" not in sys.modules and not any(isinstance(f, _RefusePandas) for f in sys.meta_path):
        sys.meta_path.insert(0, _RefusePandas())


def write_table(path, columns, metadata=None):
    """Write columns (name -> 1-D array or list, equal lengths) to Parquet at path, atomically."""
    import pyarrow as pa

    table = pa.table(columns)
    if metadata:
        table = table.replace_schema_metadata({k: str(v) for k, v in metadata.items()})
    write_arrow(path, table)
    return table


CHECKSUM_KEY = b"rlvr_sha256"  # schema metadata: a hash of the file's columns, checked on read
# schema metadata of every file rlvr writes: what it is (its path under results/, without
# .parquet) and its identity (rlvr/binding.py), checked on read against the path it is read
# from and against the identity the run planned for it
FILE_KEY, JOB_KEY = b"rlvr_file", b"rlvr_job"


def bound(name, job):
    """The schema metadata that binds a file to its name and identity (read_arrow checks it)."""
    return {FILE_KEY.decode(): name, JOB_KEY.decode(): job}


def _check_planned(path, name, job, planned):
    if name and planned and planned.get(name, job) != job:
        raise InputError(f"{path}: made from other inputs, spec or code than this run planned for it "
                         "(another config's, task's or project's file, copied here or left by another "
                         "run?); run snakemake again, which rebuilds it")


def input_identity(path, planned=None):
    """The identity an input file carries, checked as read_arrow checks it against planned."""
    name, job = read_binding(path)
    _check_planned(path, name, job, planned)
    return job


def read_binding(path):
    """(name, identity) a Parquet file carries ("" for either it lacks), from its footer alone."""
    import pyarrow.parquet as pq

    if not Path(path).is_file():
        raise InputError(f"{path}: file not found")
    try:
        metadata = pq.read_schema(path).metadata or {}
    except Exception as err:  # pyarrow raises several types for damaged files
        raise InputError(f"{path}: not a readable Parquet file ({err}); delete it and rerun") from None
    return metadata.get(FILE_KEY, b"").decode(), metadata.get(JOB_KEY, b"").decode()


def content_hash(table):
    """sha256 over a table's column names, types and values (not its metadata): a numeric or
    boolean column's values as numpy bytes, a list column's lengths then its values, any other's
    as str(value) joined by NUL in UTF-8."""
    import hashlib

    h = hashlib.sha256()
    for field, column in zip(table.schema, table.columns):
        h.update(f"{field.name}\0{_type_name(field.type)}\0".encode())
        h.update(_joined_strings(column) if _plain_strings(column) else _value_bytes(column))
    return h.hexdigest()


def _type_name(kind):
    """A column type as the hash names it: a list's by its values' type, not the name of its item
    field (pyarrow's `item` is Parquet's `element` once read back)."""
    import pyarrow as pa

    return f"list<{_type_name(kind.value_type)}>" if pa.types.is_list(kind) else str(kind)


def _value_bytes(column):
    import pyarrow as pa

    if pa.types.is_list(column.type):  # a tensor a row (the network's base): its lengths, then its values
        lists = column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column
        offsets = lists.offsets.to_numpy()
        return (offsets - offsets[0]).tobytes() + _value_bytes(lists.flatten())
    values = column.to_numpy(zero_copy_only=False)
    return values.tobytes() if values.dtype.kind in "biuf" else "\0".join(map(str, values)).encode()


def _plain_strings(column):
    import pyarrow as pa

    kind = column.type
    return (pa.types.is_string(kind) or pa.types.is_large_string(kind)) and not column.null_count


def _joined_strings(column):
    """The bytes _value_bytes gives a string column without nulls, from Arrow's buffers: the
    values' UTF-8 bytes with a NUL inserted between each two (a string column of the aggregated
    curves took 75 ms through Python's str objects, ~5 ms here)."""
    import numpy as np
    import pyarrow as pa

    values = column.combine_chunks()  # a table's column: a ChunkedArray
    if not len(values):
        return b""
    width = np.int64 if pa.types.is_large_string(values.type) else np.int32
    _, offsets, data = values.buffers()
    ends = np.frombuffer(offsets, width)[values.offset : values.offset + len(values) + 1]
    utf8 = np.frombuffer(data, np.uint8)[ends[0] : ends[-1]] if data is not None else np.empty(0, np.uint8)
    return np.insert(utf8, ends[1:-1] - ends[0], 0).tobytes()


def write_bytes(path, data):
    """Write bytes under a temporary name, fsync, rename over path, fsync the directory: path
    holds the old file or the new one, never a partial one, even after a crash or power loss.
    Any OSError (disk full, permission denied, read-only file system) names path itself, the
    temporary is removed and the old file is left as it was."""
    path = Path(path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        remove_stale_temporaries(path.parent, f".{glob.escape(path.name)}.*.tmp")
        fd, tmp = _create_temporary(path)
        placed = False
        try:
            try:
                view = memoryview(data)
                while view:  # os.write may write less than asked (at most ~2 GiB a call)
                    view = view[os.write(fd, view):]
                os.fsync(fd)
            finally:
                os.close(fd)
            with runlock.guard(path):  # an orphan, or a writer beside a live run, writes nothing
                os.replace(tmp, path)
            placed = True
        finally:
            if not placed:  # once renamed, the name is free again: whatever is there now is not ours
                tmp.unlink(missing_ok=True)
        fd = os.open(path.parent, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
    except OSError as err:
        # main() (rlvr/cli.py) prints err.filename: the file the user asked for, not only the
        # temporary or directory that failed
        where = f" ({err.filename})" if err.filename and str(err.filename) != str(path) else ""
        raise OSError(err.errno, f"{err.strerror or err}{where}", str(path)) from err


def _create_temporary(path):
    """(fd, name) of a new temporary beside path, `.<name>.<pid>.tmp`, created exclusively and
    without following a symlink: whatever already has that name (a symlink planted there, a
    leftover) is left untouched and another name is taken, `.<name>.<pid>.x<8 hex>.tmp`."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    for _ in range(100):
        try:
            return os.open(tmp, flags, 0o666), tmp  # 0666 less the umask, as open() makes files
        except FileExistsError:
            tmp = path.with_name(f".{path.name}.{os.getpid()}.x{os.urandom(4).hex()}.tmp")
    raise FileExistsError(errno.EEXIST, "no free temporary name beside it (100 tried)", str(tmp))


# a temporary's name (_create_temporary): its writer's pid, then maybe a random suffix
TEMPORARY = re.compile(r"\..+\.(\d+)(?:\.x[0-9a-f]{8})?\.tmp")


def remove_stale_temporaries(directory, pattern="**/.*.tmp"):
    """Remove the temporary files (write_bytes') under directory matching pattern whose writer
    has died: a killed job's. A living writer's is left alone: it renames or removes its own.
    Each job cleans beside the files it writes; a run cleans its results directory when it
    starts (Snakefile's onstart), for a killed job whose file the new run never writes. Only
    regular files: a symlink (or anything else) under a temporary's name was not written here."""
    for stale in Path(directory).glob(pattern):
        writer = TEMPORARY.fullmatch(stale.name)
        if writer and not _alive(writer[1]) and _regular(stale):
            stale.unlink(missing_ok=True)


def _regular(path):
    try:
        return stat.S_ISREG(path.lstat().st_mode)
    except FileNotFoundError:  # removed meanwhile (by another job cleaning the same directory)
        return False


def _alive(pid):
    """Whether the process of this pid (a string from a temporary file's name) still lives and
    will go on: a zombie, or a process with SIGKILL pending (a killed writer still in fsync),
    counts as dead."""
    try:
        os.kill(int(pid), 0)
    except (ValueError, ProcessLookupError):
        return False
    except PermissionError:  # alive, another user's
        return True
    proc = Path("/proc", str(int(pid)))
    try:  # Linux: the state after the command's closing parenthesis; SIGKILL pending in ShdPnd/SigPnd
        if proc.joinpath("stat").read_text().rsplit(")", 1)[1].split()[0] in "ZXx":
            return False
        pending = {line.split(":")[0]: int(line.split()[1], 16)
                   for line in proc.joinpath("status").read_text().splitlines()
                   if line.startswith(("SigPnd:", "ShdPnd:"))}
        return not any(mask & (1 << 8) for mask in pending.values())  # bit 8: signal 9
    except FileNotFoundError:  # it ended as we looked; or no /proc (not Linux): trust kill(0)
        return not Path("/proc/self").exists()


def write_arrow(path, table):
    """Write a pyarrow Table to Parquet at path, atomically and durably, with Parquet page
    checksums and a hash of its content that every read checks (read_arrow)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    metadata = {**(table.schema.metadata or {}), CHECKSUM_KEY: content_hash(table).encode()}
    sink = pa.BufferOutputStream()
    # no column statistics: a flipped bit in them would change nothing read here, but could
    # mislead a query engine's filter pushdown (duckdb) without anyone noticing
    pq.write_table(table.replace_schema_metadata(metadata), sink, write_page_checksum=True,
                   write_statistics=False)
    write_bytes(path, sink.getvalue().to_pybytes())


def read_arrow(path, required=(), planned=None):
    """Read a Parquet file as a pyarrow Table; InputError naming the file if it is unusable:
    unreadable, a page checksum or the content hash wrong (a flipped bit), columns missing, or
    bound to another path (a file copied or moved here) or, with planned ({name: identity}, what
    the run planned: rlvr/binding.py), carrying another identity than planned for it."""
    return read_bound(path, required, planned)[0]


def read_bound(path, required=(), planned=None):
    """read_arrow's table, and the identity the file carries ("" if none)."""
    import pyarrow.parquet as pq

    path = Path(path)
    if not path.is_file():
        raise InputError(f"{path}: file not found")
    try:
        # ParquetFile: read_table would import pyarrow.dataset (50 ms)
        table = pq.ParquetFile(path, page_checksum_verification=True).read()
    except Exception as err:  # pyarrow raises several types for damaged files
        raise InputError(f"{path}: not a readable Parquet file ({err}); delete it and rerun") from None
    metadata = dict(table.schema.metadata or {})
    expected = metadata.pop(CHECKSUM_KEY, None)
    table = table.replace_schema_metadata(metadata or None)
    if expected is None:
        raise InputError(f"{path}: has no rlvr checksum (not written by this rlvr); delete it and rerun")
    if content_hash(table).encode() != expected:
        raise InputError(f"{path}: damaged (its content does not match its checksum); delete it and rerun")
    name, job = metadata.pop(FILE_KEY, b"").decode(), metadata.pop(JOB_KEY, b"").decode()
    table = table.replace_schema_metadata(metadata or None)
    if name and not (path.as_posix().removesuffix(".parquet") + "/").endswith(f"/{name}/"):
        raise InputError(f"{path}: holds {name}.parquet, not the file this path names (copied or moved "
                         "here?); delete it and rerun")
    _check_planned(path, name, job, planned)
    missing = [c for c in required if c not in table.column_names]
    if missing:
        raise InputError(f"{path}: missing columns {missing}; delete it and rerun")
    return table, job


def read_table(path, required=()):
    """Read a Parquet file as {column: numpy array}."""
    table = read_arrow(path, required)
    return {name: table.column(name).to_numpy() for name in table.column_names}


def read_pandas(path):
    """Read a Parquet file as a pandas DataFrame; InputError naming the file if it is unusable."""
    return read_arrow(path).to_pandas()


def with_every_knob(tables):
    """tables, those written before a knob existed given its column at its default (a knob
    appended to rlvr/knobs.py at its default retrains nothing), in the column order of the
    tables that have it."""
    import pyarrow as pa

    from .knobs import OPTIONAL

    widest = max(tables, key=lambda t: t.num_columns)
    names = set(widest.column_names)
    knobs = [k for k in OPTIONAL if k.name in names]
    out = []
    for t in tables:
        have = set(t.column_names)
        missing = [k for k in knobs if k.name not in have]
        for k in missing:
            field = widest.schema.field(k.name)
            t = t.append_column(field, pa.array([k.spec_default] * t.num_rows, field.type))
        same = missing and set(t.column_names) == names  # else refused by the caller
        out.append(t.select(widest.column_names) if same else t)
    return out


def concat_tables(tables, names, order=None):
    """One table from tables with one schema (names: where each came from, for the error);
    a training row trained in several jobs (its seeds in blocks, consecutive names of one row:
    rlvr/specs.py) in seed order, as if one job had trained them; with order, a list of
    (reward_offset, method, level) keys, rows sorted into that order."""
    import itertools

    import numpy as np
    import pyarrow as pa

    from .specs import row_of

    tables = with_every_knob(tables)
    first = tables[0].schema
    for name, t in zip(names, tables):
        if not t.schema.equals(first, check_metadata=False):
            raise InputError(f"{name}: columns {t.column_names} differ from {names[0]}; delete it and rerun")
    rows = []
    for _, blocks in itertools.groupby(zip(names, tables), key=lambda x: row_of(str(x[0]))):
        blocks = [t for _, t in blocks]
        if len(blocks) > 1:  # a stable sort: each seed's rows keep their order
            row = pa.concat_tables(blocks)
            blocks = [row.take(np.argsort(row.column("seed").to_numpy(), kind="stable"))]
        rows += blocks
    table = pa.concat_tables(rows)
    if order is not None:
        rank = {tuple(key): i for i, key in enumerate(order)}
        keys = zip(*(table.column(c).to_pylist() for c in ("reward_offset", "method", "level")))
        table = table.take(sorted(range(table.num_rows), key=lambda i, k=list(keys): rank[k[i]]))
    return table


def concat_files(paths, out, order=None, reference=None, planned=None, bind=None):
    """Concatenate Parquet files with one schema into out (read_concat). With bind(identities of
    the files read, in order) -> schema metadata, out is bound (rlvr/binding.py)."""
    table, identities = read_concat(paths, order, reference, planned, with_identities=True)
    write_arrow(out, table.replace_schema_metadata(bind(identities)) if bind else table)


def read_concat(paths, order=None, reference=None, planned=None, with_identities=False):
    """Parquet files with one schema as one table; InputError naming a bad file (planned:
    read_arrow's, the identities the run planned). With reference (the reference policy's pass@k
    file), the trained policies' pass@k gain its rows for every experiment (with_reference_rows).
    with_identities: also the identities the files carry, in order (the reference's last)."""
    read = [read_bound(p, planned=planned) for p in paths]
    table = concat_tables([t for t, _ in read], [str(p) for p in paths], order)
    identities = [job for _, job in read]
    if reference is not None:
        ref, job = read_bound(reference, REFERENCE_COLUMNS, planned)
        table = with_reference_rows(table, ref)
        identities.append(job)
    return (table, identities) if with_identities else table


REFERENCE_COLUMNS = ("level", "n_prompts", "k", "pass_at_k")  # what a pass@k row says


def with_reference_rows(passk, reference):
    """The trained policies' pass@k table (passk_trained) followed, for each of its experiments in
    the order they first appear, by the step-0 policy's exact pass@k (the reference table's
    rows) as rows with method "reference", so that "before" and "after" come from one
    file. The columns that describe training (lr, seed, ...) are null in those rows: the step-0
    policy is every run's."""
    import pyarrow as pa

    missing = [c for c in ("experiment", "method", *REFERENCE_COLUMNS) if c not in passk.column_names]
    if missing:
        raise InputError(f"pass@k of trained policies: missing columns {missing}; delete it and rerun")
    experiments = list(dict.fromkeys(passk.column("experiment").to_pylist()))
    n = reference.num_rows
    parts = [passk]
    for experiment in experiments:
        given = {"experiment": pa.array([experiment] * n), "method": pa.array(["reference"] * n),
                 **{c: reference.column(c) for c in REFERENCE_COLUMNS}}
        parts.append(pa.table({field.name: given[field.name].cast(field.type) if field.name in given
                               else pa.nulls(n, field.type) for field in passk.schema}))
    return pa.concat_tables(parts)


# A rendering job (tables, figures) lists what it wrote, one `sha256sum` line a file, so that a
# table or figure edited afterwards is noticed (edited_files) and `sha256sum -c` can check it.
def file_sha256(path):
    import hashlib

    with open(path, "rb") as f:
        return hashlib.file_digest(f, "sha256").hexdigest()


def write_checksums(manifest, paths, sources=()):
    """Write manifest: `<sha256>  <path>` for each written file, its path relative to the
    working directory (the project's), as the rules name it; then sources, the lines naming
    what the files were made from (rlvr/binding.py's `# from` lines, which sha256sum skips)."""
    lines = [f"{file_sha256(p)}  {os.path.relpath(p)}\n" for p in paths]
    write_bytes(manifest, "".join(lines + list(sources)).encode())


def edited_files(manifest):
    """The files a manifest lists that exist but no longer hold what the job wrote; a missing
    file is not listed (Snakemake rebuilds a missing output by itself)."""
    edited = []
    for line in Path(manifest).read_text().splitlines():
        if line.startswith("#"):  # what the files were made from, not a file written
            continue
        digest, _, path = line.partition("  ")
        if os.path.exists(path) and file_sha256(path) != digest:
            edited.append(path)
    return edited
