"""Which rlvr code a pipeline job runs, as one content hash: the cache's code dependency.

`python -m rlvr <stage>` runs rlvr/jobs/<stage>.py: a job's code is that module's import closure
(read off the source with `ast`, lazy imports too), so an edit of a module reruns exactly the
stages that import it; rlvr/cli.py only parses arguments. A module counts by its syntax tree
without docstrings (comments, docstrings and layout are no change). Of rlvr/estimators.py a job
counts the shared code and the estimators it runs, not how they are shown (`display_version`, a
param of the rendering jobs). rlvr/knobs.py's ROW_KNOBS counts for no job: a row's spec holds its
knobs away from their defaults (rlvr/specs.py), so a knob appended at its default reruns nothing.
"""

import ast
import copy
import hashlib
import json
import os
import sys
from functools import cache
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent
DISPLAY = ("label", "family", "long_label", "label_zh")  # how an estimator is shown
SKIPPED = ("knobs", "ROW_KNOBS")  # a registry no job's code counts: its values are in the specs
_SELF = Path(__file__).read_bytes()  # what read a module's facts: part of their key
_facts = {}  # {key of a module's bytes: its facts}, read from a saved file or computed here
_used, _new = set(), set()  # the keys this process looked up, and those it computed
SAVED = Path(".snakemake/rlvr.code-facts.json")  # in the project directory, beside Snakemake's records


def _sha(text):
    return hashlib.sha256(text.encode()).hexdigest()


def _path(module):
    """rlvr/<module>.py, or the package's __init__.py ("jobs.train": rlvr/jobs/train.py)."""
    base = PACKAGE.joinpath(*module.split("."))
    return base / "__init__.py" if base.is_dir() else base.with_suffix(".py")


def _code(nodes):
    """The hash of statements' code (a syntax tree's dump holds no comments or positions)."""
    return _sha(ast.dump(ast.Module(body=list(nodes), type_ignores=[])))


def _imports(tree, module):
    """The rlvr modules a module imports anywhere in its tree (relative or `rlvr.` imports)."""
    package = module.split(".")[:-1] if _path(module).name != "__init__.py" else module.split(".")
    package = [] if module == "__init__" else package  # rlvr/__init__.py: `from . import x` is rlvr.x
    found = set()
    for n in ast.walk(tree):
        if isinstance(n, ast.Import):
            found |= {a.name.partition(".")[2] for a in n.names if a.name.startswith("rlvr.")}
        elif isinstance(n, ast.ImportFrom) and (n.level or (n.module or "").startswith("rlvr")):
            target = (package[:len(package) - n.level + 1] if n.level else []) + \
                [m for m in (n.module or "").split(".") if m][0 if n.level else 1:]
            for alias in n.names:  # `from . import x` imports the module x; `from .x import f`, x
                sub = ".".join([*target, alias.name])
                found.add(sub if _path(sub).is_file() else ".".join(target))
    found |= {".".join(m.split(".")[:i]) for m in found for i in range(1, m.count(".") + 1)}  # packages run
    return sorted(m for m in found if m and _path(m).is_file())


def _estimator_facts(body):
    """{name: hash of its registration without DISPLAY keywords and of its function},
    [[name, {DISPLAY keyword: value}]] in registration order, and the other statements. A
    registration: `@estimator("name", ...)` on a function, or `estimator("name", ...)(fn)`, a
    second name for a function registered above."""
    functions = {n.name: n for n in body if isinstance(n, ast.FunctionDef)}
    own, shown, shared = {}, [], []
    for stmt in body:
        calls = [d for d in getattr(stmt, "decorator_list", ()) if isinstance(d, ast.Call)]
        if isinstance(stmt, ast.Expr) and isinstance(getattr(stmt.value, "func", None), ast.Call):
            calls, stmt = [stmt.value.func], functions[stmt.value.args[0].id]
        calls = [c for c in calls if getattr(c.func, "id", None) == "estimator"]
        if not calls:
            shared.append(stmt)
            continue
        fn = copy.copy(stmt)
        fn.decorator_list = []  # each name's own call counts, without DISPLAY
        for call in calls:
            name, kept = call.args[0].value, [k for k in call.keywords if k.arg not in DISPLAY]
            own[name] = _sha(_code([ast.Expr(ast.Call(call.func, call.args, kept))]) + _code([fn]))
            shown.append([name, {k.arg: ast.literal_eval(k.value) for k in call.keywords
                                 if k.arg in DISPLAY}])
    return own, shown, shared


def facts(module):
    """{"imports", "code"} of a module (and "estimators", "shown" of rlvr/estimators.py), keyed
    by its bytes, the Python that parses them and this file: read once per source."""
    source = _path(module).read_bytes()
    key = hashlib.sha256(source + _SELF + f"{module} {sys.version_info[:2]}".encode()).hexdigest()[:32]
    if key not in _facts:
        tree = ast.parse(source)
        for node in ast.walk(tree):  # docstrings are no change of the code
            body = getattr(node, "body", None)
            if isinstance(body, list) and isinstance(getattr(body[0], "value", None), ast.Constant) \
                    and isinstance(body[0].value.value, str):
                node.body = body[1:] or [ast.Pass()]
        name = [getattr(getattr(s, "targets", [None])[0], "id", None) for s in tree.body]
        body = [s for s, n in zip(tree.body, name) if (module, n) != SKIPPED]
        _facts[key] = {"imports": _imports(tree, module)}
        if module == "estimators":
            _facts[key]["estimators"], _facts[key]["shown"], body = _estimator_facts(body)
        _facts[key]["code"] = _code(body)
        _new.add(key)
    _used.add(key)
    return _facts[key]


@cache
def job_modules(stage):
    """Every rlvr module `python -m rlvr <stage>` runs, sorted: the closure of rlvr/jobs/<stage>.py."""
    if not _path(f"jobs.{stage}").is_file():
        raise ValueError(f"no pipeline stage {stage!r}: rlvr/jobs/{stage}.py does not exist")
    seen, todo = set(), {"__init__", "jobs", f"jobs.{stage}"}
    while todo:
        module = todo.pop()
        if module not in seen:
            seen.add(module)
            todo |= set(facts(module)["imports"])
    return tuple(sorted(seen))


@cache  # once a process: a plan asks for it per training row
def code_version(stage, methods=()):
    """The hash of the code `python -m rlvr <stage>` runs with these estimators."""
    parts = []
    for module in job_modules(stage):
        found = facts(module)
        parts.append(f"{module}:{found['code']}")
        if "estimators" in found:  # a method not registered: KeyError (a config names only registered ones)
            parts += [f"estimators.{m}:{found['estimators'][m]}" for m in sorted(set(methods))]
    return _sha("\n".join(parts))[:16]


def display_version(methods):
    """A hash of how tables and figures show these estimators: labels, family and place in it
    (which picks the colour, rlvr/style.py); an estimator added after its family's does not count."""
    families, entries = {}, []
    for name, display in facts("estimators")["shown"]:
        place = families.setdefault(display.get("family", "other"), [])
        place.append(name)
        if name in methods:
            entries.append(f"{name}:{sorted(display.items())}:{len(place) - 1}")
    return _sha("\n".join(sorted(entries)))[:16]


def use_saved(path=SAVED):
    """Take the facts saved at path (by save): reading every module costs ~0.15 s, a job's ~0.05 s."""
    try:
        _facts.update(json.loads(Path(path).read_text()))
    except (OSError, ValueError, TypeError):
        pass


def save(path=SAVED):
    """Write the facts this process read to path (atomically), if any is new (a run's start)."""
    if _new:  # .snakemake/ exists once a run starts
        tmp = Path(path).with_name(f".{Path(path).name}.{os.getpid()}.tmp")
        tmp.write_text(json.dumps({k: _facts[k] for k in _used}, sort_keys=True))
        os.replace(tmp, path)
