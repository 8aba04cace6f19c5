"""One executing run per results directory, and no job that writes after its run has ended.

The lock belongs to the results directory, not to where a command was started: its state lives
in `<results>/.rlvr/`. The process that runs (Snakemake's, or `python -m rlvr all --results`)
holds an OS lock (flock) on `.rlvr/rlvr.flock` for as long as it lives; the kernel drops it
however the process dies, so leftover Snakemake locks can be told from live ones
(clear_stale_locks). At its start it writes a fresh token, and the identity it planned for
every file (rlvr/binding.py), to `.rlvr/rlvr.run` and hands the token to its jobs in the
environment (RLVR_RUN_TOKEN). A job renames a result into place only while that token is still
the directory's (guard): when `kill -9` of snakemake alone leaves its jobs running, a later run
writes its own token, and an orphan that finishes afterwards refuses to write instead of
overwriting that run's results. The check and the rename happen under a shared lock
(`.rlvr/rlvr.write.flock`) that a starting run takes exclusively to change the token, so no
orphan's rename slips in between.

Every lock and state file is opened without following a symlink, created 0600, and refused if
another user owns it: a file another user can open is one they can lock (and so block every run),
and a symlink planted in its place would make a run truncate the link's target.

A process that no run started (no token: `python -m rlvr <stage>` by hand, or a job of a run
started with `--no-hooks`) writes a file only while no run holds the results directory it lies
in (the nearest `.rlvr/` above it), from whichever directory it was started. What this cannot
protect: on a network file system without flock support (some NFS and FUSE mounts) the locks
may not be honoured across machines.
"""

import fcntl
import json
import os
import secrets
import sys
import time
from contextlib import contextmanager
from pathlib import Path

TOKEN_ENV = "RLVR_RUN_TOKEN"  # the run that started this job
STATE_ENV = "RLVR_RUN_STATE"  # that run's state directory (<results>/.rlvr/), absolute
STATE_DIR = ".rlvr"  # a results directory's run state, under it
RUN_LOCK = "rlvr.flock"  # held exclusively by the executing run for its whole life
WRITE_LOCK = "rlvr.write.flock"  # shared while a job renames, exclusive while the token changes
RUN_FILE = "rlvr.run"  # the executing run's token
REFUSED_LOG = "rlvr.refused.log"  # one line per job that found its run ended and wrote nothing


class LockError(RuntimeError):
    """Another run holds the directory, or a lock file is not safely ours; or this job's run ended."""


def state_of(results):
    """The run state directory of a results directory."""
    return Path(results) / STATE_DIR


def state_for(path):
    """The run state directory that governs a file (or directory) written at path: the nearest
    `.rlvr/` in it or the directories above it (None if there is none: no run ever held them)."""
    path = Path(os.path.abspath(path))
    for parent in (path, *path.parents):
        if (parent / STATE_DIR).is_dir():
            return parent / STATE_DIR
    return None


def open_private(path, flags=os.O_RDWR | os.O_CREAT):
    """A file descriptor of path, opened without following a symlink, created 0600, refused
    (LockError naming it) if another user owns it; its permissions narrowed to 0600 if wider."""
    path = Path(path)
    try:
        fd = os.open(path, flags | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    except OSError as err:
        why = "is a symbolic link" if path.is_symlink() else err.strerror.lower()
        raise LockError(f"{path}: {why}; remove it (rlvr's lock and state files are plain files "
                        "of the user who runs the pipeline)") from None
    st = os.fstat(fd)
    if st.st_uid != os.getuid():
        os.close(fd)
        raise LockError(f"{path}: owned by user id {st.st_uid}, not you ({os.getuid()}); remove it "
                        "(another user's lock file could block or misdirect your runs)")
    if st.st_mode & 0o077:
        os.fchmod(fd, 0o600)
    return fd


def clear_stale_locks(snakemake_dir, state_dir):
    """Remove Snakemake's directory locks (under snakemake_dir, `.snakemake/`) if no run is
    executing (none holds the run lock of state_dir): a run killed with SIGKILL leaves them
    behind and every later run would refuse to start."""
    state_dir = Path(state_dir)
    state_dir.mkdir(parents=True, exist_ok=True)
    fd = open_private(state_dir / RUN_LOCK)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return  # a run is executing here: its locks are not stale
    finally:
        os.close(fd)  # also releases the lock if we took it
    for stale in (Path(snakemake_dir) / "locks").glob("*.lock"):
        stale.unlink()


def held(state_dir):
    """Whether a run holds the results directory whose state is state_dir."""
    path = Path(state_dir) / RUN_LOCK
    if not path.exists():
        return False
    fd = open_private(path)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return False
    except BlockingIOError:
        return True
    finally:
        os.close(fd)


def take(state_dir, planned_jobs=None, what="snakemake"):
    """Start a run: hold the run lock for the rest of this process (LockError naming the holder
    if another run has it), write a fresh token and put it in this process's environment, which
    its jobs inherit. planned_jobs ({file name under results/: identity}, rlvr/binding.py): what
    the run plans for each file, which its jobs check their inputs against (planned_jobs()).
    what: the kind of run, for a refused run's message. Returns the lock's file descriptor;
    keep it open."""
    state_dir = Path(state_dir).absolute()
    state_dir.mkdir(parents=True, exist_ok=True)
    fd = open_private(state_dir / RUN_LOCK)
    for attempt in range(5):  # a job's check (held) may hold it for a moment
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            break
        except BlockingIOError:
            time.sleep(0.02 * attempt)
    else:
        holder = os.pread(fd, 200, 0).decode(errors="replace").strip() or "another process"
        os.close(fd)
        raise LockError(f"another run holds {state_dir.parent} ({holder}); wait for it to end: one "
                        "run per results directory (snakemake --unlock does not change that)") from None
    os.ftruncate(fd, 0)
    os.pwrite(fd, f"{what}, pid {os.getpid()}, started {time.strftime('%Y-%m-%d %H:%M:%S')} in "
                  f"{os.getcwd()}\n".encode(), 0)
    token = secrets.token_hex(16)
    with _write_lock(state_dir, fcntl.LOCK_EX):  # waits for any orphan's rename in progress
        tmp = state_dir / f".{RUN_FILE}.{os.getpid()}.tmp"
        with os.fdopen(open_private(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC), "wb") as out:
            out.write(json.dumps({"token": token, "pid": os.getpid(), "jobs": planned_jobs or {}}).encode())
            out.flush()
            os.fsync(out.fileno())
        os.replace(tmp, state_dir / RUN_FILE)
    os.environ[TOKEN_ENV], os.environ[STATE_ENV] = token, str(state_dir)
    return fd


@contextmanager
def _write_lock(state_dir, mode):
    fd = open_private(Path(state_dir) / WRITE_LOCK)
    try:
        fcntl.flock(fd, mode)
        yield
    finally:
        os.close(fd)


def _run_state(state_dir):
    """What the run that last started in state_dir wrote ({} if none did)."""
    if not (Path(state_dir) / RUN_FILE).exists():
        return {}
    fd = open_private(Path(state_dir) / RUN_FILE, os.O_RDONLY)
    try:
        with os.fdopen(os.dup(fd), "rb") as f:
            return json.loads(f.read() or b"{}")
    except ValueError:
        return {}
    finally:
        os.close(fd)


def planned_jobs():
    """{file name: job id} that the run which started this job planned (None outside a run)."""
    if not os.environ.get(TOKEN_ENV):
        return None
    return _run_state(os.environ[STATE_ENV]).get("jobs")


def holder(state_dir):
    """Who holds the run lock of state_dir, as its lock file says."""
    try:
        fd = open_private(Path(state_dir) / RUN_LOCK, os.O_RDONLY)
    except LockError:
        return "another process"
    try:
        return os.pread(fd, 300, 0).decode(errors="replace").strip() or "another process"
    finally:
        os.close(fd)


def check_current(governing=None):
    """Refuse (LockError) if this process is a job of a run that has ended, or if it belongs to
    no run while a run holds governing (the state directory of the results it writes:
    state_for) — a job of a `--no-hooks` run, or `python -m rlvr` by hand from any directory,
    beside a live run. Without a run token and with no run holding governing, it passes."""
    token, state_dir = os.environ.get(TOKEN_ENV), os.environ.get(STATE_ENV)
    if not token:
        if governing is not None and held(governing):
            raise LockError(f"a run holds {Path(governing).parent} ({holder(governing)}) and did not "
                            "start this command; it writes nothing there, so as not to overwrite that "
                            "run's results")
        return
    current = _run_state(state_dir).get("token")
    if current != token or not held(state_dir):
        err = LockError("the snakemake run that started this job has ended (was it killed?)"
                        f"{'; a later run owns' if current != token else ''} {state_dir}: "
                        "this job writes nothing")
        # also here: the job's own log may be truncated by a later run's job of the same name
        fd = open_private(Path(state_dir) / REFUSED_LOG, os.O_WRONLY | os.O_CREAT | os.O_APPEND)
        os.write(fd, f"{time.strftime('%Y-%m-%d %H:%M:%S')} pid {os.getpid()} rlvr {' '.join(sys.argv[1:])}: "
                     f"{err}\n".encode())
        os.close(fd)
        raise err


@contextmanager
def guard(path=None):
    """Around the rename that puts a result at path in place: proceed only if this job's run
    still owns the directory, or, for a process no run started, if no run holds path's results
    (check_current); and keep a starting run from changing the token meanwhile."""
    state_dir = os.environ.get(STATE_ENV)
    if not os.environ.get(TOKEN_ENV) or not state_dir:
        check_current(state_for(path) if path is not None else None)
        yield
        return
    with _write_lock(state_dir, fcntl.LOCK_SH):
        check_current()
        yield
