"""Which rlvr code a pipeline job runs, as one content hash: the cache's code dependency.

A job `python -m rlvr <stage>` runs rlvr/__main__.py, the module-level code of rlvr/cli.py
and its `cmd_<stage>` function, and every rlvr module those import, directly or not (read off
the source with `ast` when the Snakefile is parsed, never listed by hand). The version is
"<those modules>:<hash>", the hash over each module's lines of code (blank lines and comment
lines are not code); in rlvr/estimators.py it covers the shared code and only the estimators
the job uses, so adding or editing another estimator reruns nothing here. Snakemake records the
version as a rule parameter and reruns a job when it changes; the job hashes the same modules
again when it starts (`check`, cheap: no import analysis), so a job never runs code other than
the version recorded for it.
"""

import ast
import hashlib
from functools import cache
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent


@cache
def _source(module):
    return (PACKAGE / f"{module}.py").read_text(encoding="utf-8")


@cache
def _tree(module):
    return ast.parse(_source(module))


def _code_lines(text):
    """text without blank lines and comment lines, each line's trailing blanks stripped."""
    return "\n".join(line.rstrip() for line in text.splitlines()
                     if line.strip() and not line.lstrip().startswith("#"))


def _sha(text):
    return hashlib.sha256(text.encode()).hexdigest()


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


def _without_display(decorator):
    if isinstance(decorator, ast.Call):
        decorator.keywords = [k for k in decorator.keywords if k.arg not in ("label", "family")]
    return decorator


@cache
def _estimators():
    """(hash of the shared code of estimators.py, {name: hash of its estimator function})."""
    lines = _source("estimators").splitlines()
    shared = [True] * len(lines)
    own = {}
    for stmt in ast.parse(_source("estimators")).body:
        name = _estimator_name(stmt) if isinstance(stmt, ast.FunctionDef) else None
        if name is not None:
            first = min(node.lineno for node in [stmt, *stmt.decorator_list]) - 1
            # how figures show it (label, family) is not what it computes: not hashed
            registered = [ast.unparse(_without_display(d)) for d in stmt.decorator_list]
            body = _code_lines("\n".join(lines[stmt.lineno - 1:stmt.end_lineno]))
            own[name] = _sha("\n".join([*registered, body]))
            shared[first:stmt.end_lineno] = [False] * (stmt.end_lineno - first)
    return _sha(_code_lines("\n".join(line for line, keep in zip(lines, shared) if keep))), own


def _hash(modules, methods):
    parts = []
    for module in modules:
        if module == "estimators":
            shared, own = _estimators()
            unknown = sorted(set(methods) - set(own))
            if unknown:
                raise ValueError(f"no estimator {unknown} in rlvr/estimators.py")
            parts += [f"estimators:{shared}"] + [f"estimators.{m}:{own[m]}" for m in sorted(set(methods))]
        else:
            parts.append(f"{module}:{_sha(_code_lines(_source(module)))}")
    return _sha("\n".join(parts))[:16]


@cache
def code_version(stage, methods=()):
    """"<modules>:<hash>" of the code `python -m rlvr <stage>` runs with these estimators."""
    modules = job_modules(stage)
    return f"{','.join(modules)}:{_hash(modules, methods)}"


def check(version, methods=()):
    """The version of the same modules' code as it is on disk now (compare with `version`)."""
    modules = version.partition(":")[0].split(",")
    if not all((PACKAGE / f"{m}.py").is_file() for m in modules):
        return "(a module is gone)"
    return f"{','.join(modules)}:{_hash(modules, methods)}"
