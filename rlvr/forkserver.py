"""Start pipeline jobs from a warm interpreter: a fork server.

A training job computes for about 0.1 s, but a fresh `python -m rlvr` first spends about
0.2 s importing numpy and pyarrow; over ~150 jobs on 2 cores that start-up was most of a
cold run. So the workflow's jobs (RLVR_FORKSERVER=1, set in workflow/rules/common.smk)
ask a server that imported them once to fork a child for the job. The child takes over the
job's stdin, stdout and stderr (passed over the socket), its working directory,
environment and arguments, runs `rlvr.cli.main` as the job's own process would, and
sends back the exit code. Every job is still its own process with its own log and
outputs; only the imports are shared.

- The server's name covers everything that decides what a job computes: the Python, the
  variables read at start-up (PYTHON*, LANG, LC_*, the BLAS thread counts), and the size
  and mtime of every rlvr module and of numpy and pyarrow. Edit rlvr and the next job
  starts a new server; the old one exits when it has been idle for IDLE_SECONDS.
- The socket is in Linux's abstract namespace (no file anywhere); only the same user may
  connect (SO_PEERCRED).
- A job that finds no server starts one in the background and runs in its own process,
  as does any job the server cannot take. If a job's process is killed, its child sees
  the socket close and exits.
- Off with RLVR_FORKSERVER=0, on systems other than Linux, inside SLURM jobs (each job
  may be on another node), and for a Python started with options such as -X or -O.
"""

import marshal
import os
import sys

IDLE_SECONDS = 30
# the compute subcommands (cli.py: compute=True); the renderers import pandas and matplotlib,
# which a compute job must not have loaded, so they run in their own process
SERVED_COMMANDS = ("task", "reference", "exact", "gradstats", "train", "aggregate")
# variables read once, at start-up or when numpy loads its BLAS: a child cannot change them
NAMED_ENV = ("PYTHON", "LC_", "OMP_", "OPENBLAS_", "MKL_", "GOTO_", "VECLIB_", "NUMEXPR_", "NPY_")
MAX_REQUEST = 1 << 20  # bytes: argv, working directory and environment, marshalled
PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))


def enabled():
    plain_python = not (sys.flags.optimize or sys.flags.isolated or sys.flags.dev_mode
                        or sys._xoptions or sys.warnoptions)
    return (os.environ.get("RLVR_FORKSERVER") == "1" and sys.platform == "linux"
            and "SLURM_JOB_ID" not in os.environ and plain_python)


def server_name(package_dir=PACKAGE_DIR):
    """The name of the server for this Python, environment and rlvr code (its socket's
    address in the abstract namespace is a NUL byte and this name).

    Every job computes it before it may be served, so it uses only modules that cost nothing
    to import: json, hashlib, importlib.util and socket.py would add ~35 ms to each job."""
    import zlib

    env = sorted((k, v) for k, v in os.environ.items() if k.startswith(NAMED_ENV) or k == "LANG")
    parts = [sys.executable, sys.version, package_dir, env]
    files = [e.path for e in os.scandir(package_dir) if e.name.endswith(".py")]
    for lib in ("numpy", "pyarrow"):  # the copy `import` finds: the first on sys.path
        inits = (os.path.join(d or ".", lib, "__init__.py") for d in sys.path)
        files.append(next((f for f in inits if os.path.isfile(f)), lib + " not found"))
    for f in sorted(files):
        try:
            st = os.stat(f)
            parts.append((f, st.st_size, st.st_mtime_ns))
        except OSError:  # numpy or pyarrow not found: the job will say so itself
            parts.append((f, None, None))
    state = repr(parts).encode()
    # two independent 32-bit checksums: an accidental clash of both is not a concern here
    return f"rlvr-forkserver-{os.getuid()}-{zlib.crc32(state):08x}{zlib.adler32(state):08x}"


# --- the job's side --------------------------------------------------------------------------


def run_in_forkserver(argv):
    """Run `python -m rlvr <argv>` in a child of the warm server and return its exit code;
    None if no server took it (the caller runs it itself)."""
    if not enabled() or not argv or argv[0] not in SERVED_COMMANDS:
        return None
    import _socket  # the C module under socket.py, without its enums and selectors (~10 ms)

    name = server_name()
    sock = _socket.socket(_socket.AF_UNIX, _socket.SOCK_SEQPACKET)
    try:
        try:
            sock.connect("\0" + name)
        except OSError:  # none yet, or it just went idle: start one for the jobs after this one
            start_server(name)
            return None
        # marshal: built in, unlike json; the server is this same Python (it is in the name)
        request = marshal.dumps({"argv": argv, "cwd": os.getcwd(), "env": dict(os.environ)})
        fds = b"".join(fd.to_bytes(4, sys.byteorder) for fd in (0, 1, 2))  # as socket.send_fds
        try:
            sock.sendmsg([request], [(_socket.SOL_SOCKET, _socket.SCM_RIGHTS, fds)])
            started = sock.recv(16)
            status = sock.recv(16) if started else b""
        except OSError:
            started, status = b"", b""
    finally:
        sock.close()
    if not started:
        return None  # the server went away before forking
    if not status:
        print(f"rlvr: the forked process of `rlvr {' '.join(argv)}` ended without an exit status",
              file=sys.stderr)
        return 1
    return int(status)


def start_server(name):
    """Start a server in the background, in a session of its own; never fail the job."""
    import subprocess

    path = os.pathsep.join(filter(None, [os.path.dirname(PACKAGE_DIR), os.environ.get("PYTHONPATH")]))
    try:  # -P and cwd="/": nothing from the first job's directory on the server's import path
        subprocess.Popen([sys.executable, "-P", "-m", "rlvr.forkserver", name], cwd="/",
                         env={**os.environ, "PYTHONPATH": path}, stdin=subprocess.DEVNULL,
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    except OSError:
        pass


# --- the server's side -----------------------------------------------------------------------


def preload():
    """Import what the compute jobs need (numpy, pyarrow, the rlvr stages), nothing else, and
    run three tiny jobs in a temporary directory: numpy and pyarrow import more on first use
    (numpy.random, numpy.ma, ...), ~50 ms that every child would otherwise pay again."""
    import tempfile

    from . import cli, io

    io.without_pandas()  # as every compute job does; the renderers are not served
    with tempfile.TemporaryDirectory(prefix="rlvr-forkserver-") as tmp:
        task = os.path.join(tmp, "task.parquet")
        for argv in (
            ["task", "--P", "4", "--M", "4", "--seed", "0", "--level-logodds", "-1", "0", "1", "2",
             "--spread", "0.3", "--out", task],
            ["train", "--task", task, "--experiment", "warmup", "--method", "grpo", "--lr", "1",
             "--offset", "0", "--G", "2", "--prompts-per-step", "2", "--steps", "2", "--seed", "0",
             "--value-lr", "0.1", "--eval-every", "1", "--k", "1", "--out-run", f"{tmp}/r.parquet",
             "--out-curve", f"{tmp}/c.parquet", "--out-passk", f"{tmp}/p.parquet"],
            ["gradstats", "--task", task, "--offset", "0", "--method", "grpo", "--level", "medium",
             "--G", "2", "--reps", "4", "--seed", "0", "--out", f"{tmp}/g.parquet"],
        ):
            if cli.main(argv) != 0:
                raise RuntimeError(f"warm-up job failed: {argv}")


def serve(name):
    import gc
    import signal
    import socket
    import struct

    listener = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    try:
        listener.bind("\0" + name)
    except OSError:
        return  # another job started a server under this name first
    listener.listen(64)  # jobs that arrive while we import wait here
    preload()  # its jobs' log lines go to the server's stderr: /dev/null
    gc.freeze()  # children would otherwise copy every page the collector touches
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # the kernel reaps children; they report themselves
    listener.settimeout(IDLE_SECONDS)
    while True:
        try:
            conn, _ = listener.accept()
        except TimeoutError:
            return
        with conn:
            conn.setblocking(True)
            _, uid, _ = struct.unpack("3i", conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, 12))
            if uid != os.getuid():
                continue
            try:
                msg, fds, _, _ = socket.recv_fds(conn, MAX_REQUEST, 3)
                request = marshal.loads(msg)
            except (OSError, ValueError, EOFError, TypeError):
                continue
            if len(fds) == 3 and os.fork() == 0:
                code = 1
                try:  # never return into this loop: the child must not become a second server
                    listener.close()
                    code = run_child(conn, request, fds)
                finally:
                    os._exit(code)
            for fd in fds:
                os.close(fd)


def run_child(conn, request, fds):
    """In the forked child: become the job's process, run it, send its exit code."""
    import signal
    import threading

    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    for target, fd in enumerate(fds):
        os.dup2(fd, target)
        os.close(fd)
    os.chdir(request["cwd"])
    os.environ.clear()
    os.environ.update(request["env"])
    sys.path.insert(0, request["cwd"])  # as `python -m` has it
    threading.Thread(target=exit_when_closed, args=(conn,), daemon=True).start()
    conn.send(b"started")
    code = run_job(request["argv"])
    conn.send(str(code).encode())  # after run_job flushed the job's output
    return code


def exit_when_closed(conn):
    """The job's process sends nothing more: recv returns only when it is gone (killed)."""
    conn.recv(1)
    os._exit(1)


def run_job(argv):
    """`rlvr.cli.main(argv)` with the exit code a `python -m rlvr` process would have."""
    import traceback

    from .cli import main

    try:
        code = main(argv)
    except SystemExit as stop:
        code = stop.code
    except BaseException:
        traceback.print_exc()
        code = 1
    if code is not None and not isinstance(code, int):
        print(code, file=sys.stderr)
        code = 1
    sys.stdout.flush()
    sys.stderr.flush()
    return code or 0


if __name__ == "__main__":
    serve(sys.argv[1])
