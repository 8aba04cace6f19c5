"""Which rlvr code a pipeline job runs, as one content hash: the cache's code dependency.

A job `python -m rlvr <stage>` runs rlvr/__main__.py, the module-level code of rlvr/cli.py
and its `cmd_<stage>` function, and every rlvr module those import, directly or not (read off
the source with `ast`, never listed by hand). The hash covers each such module's syntax tree,
so a comment or a blank line is no change; in rlvr/estimators.py it covers the shared code
and only the estimators the job uses, so adding or editing another estimator reruns nothing
here. Snakemake records the hash as a rule parameter and reruns a job when it changes; the
job checks it again when it starts (rlvr/cli.py), so a job never runs code other than the one
recorded for it.
"""

import ast
import hashlib
from functools import cache
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent


@cache
def _tree(module):
    return ast.parse((PACKAGE / f"{module}.py").read_text(encoding="utf-8"))


@cache
def _digest(module):
    """sha256 of a module's syntax tree (comments and layout are not part of it)."""
    return hashlib.sha256(ast.dump(_tree(module)).encode()).hexdigest()


def _imports(node):
    """The rlvr modules that the statements under node import (uncached: node may be a part)."""
    found = set()
    for n in ast.walk(node):
        if isinstance(n, ast.ImportFrom) and (n.level == 1 or (n.module or "").split(".")[0] == "rlvr"):
            module = n.module if n.level == 1 else (n.module or "").partition(".")[2]
            found |= {module} if module else {a.name for a in n.names}  # `from . import x, y`
        elif isinstance(n, ast.Import):
            found |= {a.name.split(".")[1] for a in n.names if a.name.startswith("rlvr.")}
    return {m for m in found if (PACKAGE / f"{m}.py").is_file()}


@cache
def _module_imports(module):
    return frozenset(_imports(_tree(module)))


@cache
def job_modules(stage):
    """Every rlvr module (file stem) that `python -m rlvr <stage>` runs, sorted."""
    cli = _tree("cli")
    fns = {n.name: n for n in cli.body if isinstance(n, ast.FunctionDef)}
    if f"cmd_{stage}" not in fns:
        raise ValueError(f"rlvr.cli has no cmd_{stage}")
    todo = _imports(fns[f"cmd_{stage}"]) | _imports(_tree("__main__"))
    for stmt in cli.body:  # module-level code of cli.py, not the other commands' bodies
        if not isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            todo |= _imports(stmt)
    seen = {"__init__", "__main__", "cli"}
    while todo:
        module = todo.pop()
        if module not in seen:
            seen.add(module)
            todo |= _module_imports(module)
    return tuple(sorted(seen))


def _estimator_name(fn):
    """The registry name of an @estimator("name", ...) function, else None."""
    for d in fn.decorator_list:
        if isinstance(d, ast.Call) and getattr(d.func, "id", None) == "estimator" and d.args:
            return d.args[0].value
    return None


@cache
def _estimators():
    """(digest of the shared code of estimators.py, {name: digest of its estimator function})."""
    own, shared = {}, []
    for stmt in _tree("estimators").body:
        name = _estimator_name(stmt) if isinstance(stmt, ast.FunctionDef) else None
        if name is None:
            shared.append(stmt)
        else:
            own[name] = hashlib.sha256(ast.dump(stmt).encode()).hexdigest()
    return hashlib.sha256(ast.dump(ast.Module(body=shared, type_ignores=[])).encode()).hexdigest(), own


@cache
def code_version(stage, methods=()):
    """Hex digest over the code `python -m rlvr <stage>` runs, with these estimators."""
    parts = []
    for module in job_modules(stage):
        if module == "estimators":
            shared, own = _estimators()
            unknown = sorted(set(methods) - set(own))
            if unknown:
                raise ValueError(f"no estimator {unknown} in rlvr/estimators.py")
            parts += [f"estimators\0{shared}"] + [f"estimators.{m}\0{own[m]}" for m in sorted(set(methods))]
        else:
            parts.append(f"{module}\0{_digest(module)}")
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()[:16]
