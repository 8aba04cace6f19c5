"""Which rlvr code a pipeline job runs, as one content hash: the cache's code dependency.

A job `python -m rlvr <stage>` runs rlvr/__main__.py, the module-level code of rlvr/cli.py
and its `cmd_<stage>` function, and every rlvr module those import, directly or not (read off
the source with `ast` when the Snakefile is parsed, never listed by hand). The version is
"<those modules>:<hash>", the hash over each module's syntax tree without its docstrings, so
that comments, docstrings and layout are no change; of rlvr/cli.py only the code the stage runs
counts (not the other stages' commands or options, not help texts); in rlvr/estimators.py the shared code
and only the estimators the job uses, without how they are shown (label, family), so adding,
editing or relabelling another estimator reruns nothing here. How the estimators are shown is
the separate `display_version`, a param of the rules that draw tables and figures. Snakemake
records both as rule parameters and reruns a job when one changes; the job hashes the same
modules again when it starts (`check`, cheap: no import analysis), so a job never runs code
other than the version recorded for it.
"""

import ast
import hashlib
import json
import os
import sys
from functools import cache
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent
# how an estimator is shown, not what it computes (rlvr/estimators.py's `estimator` keywords)
DISPLAY = ("label", "family", "long_label", "label_zh")


def _path(module):
    """rlvr/<module>.py, or rlvr/<package>/__init__.py for a package ("demos.clipping": a file
    of the package rlvr/demos/)."""
    base = PACKAGE.joinpath(*module.split("."))
    return base / "__init__.py" if base.is_dir() else base.with_suffix(".py")


@cache
def _tree(module):
    """A module's syntax tree, parsed once, without its docstrings (they are no change of the
    code); the cached trees are never changed after that."""
    return _without_docstrings(ast.parse(_path(module).read_text(encoding="utf-8")))


def _without_docstrings(tree):
    """tree (a module) with every module, class and function docstring removed, in place."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) \
                    and isinstance(body[0].value.value, str):
                node.body = body[1:] or [ast.Pass()]
    return tree


def _copy(tree):
    """A fresh copy of a module's syntax tree (the cached trees are never changed)."""
    return ast.parse(ast.unparse(tree))


def _sha(text):
    return hashlib.sha256(text.encode()).hexdigest()


def _code(node):
    """The hash of a syntax tree's code (from _tree: no docstrings; no comments or line
    positions, which a syntax tree's dump does not hold)."""
    module = node if isinstance(node, ast.Module) else ast.Module(body=[node], type_ignores=[])
    return _sha(ast.dump(module))


def _package_of(module):
    parts = module.split(".")
    return parts if _path(module).name == "__init__.py" else parts[:-1]


def _imports(node, module):
    """The rlvr modules that the statements under node (a part of `module`) import."""
    package, found = _package_of(module), set()
    for n in ast.walk(node):
        if isinstance(n, ast.ImportFrom):
            if n.level:
                if n.level - 1 > len(package):
                    continue
                target = package[:len(package) - (n.level - 1)] + (n.module.split(".") if n.module else [])
            elif (n.module or "").split(".")[0] == "rlvr":
                target = n.module.split(".")[1:]
            else:
                continue
            for alias in n.names:  # `from . import x` imports the module x; `from .x import f`, x
                sub = ".".join([*target, alias.name])
                found.add(sub if _path(sub).is_file() else ".".join(target))
        elif isinstance(n, ast.Import):
            found |= {a.name.partition(".")[2] for a in n.names if a.name.startswith("rlvr.")}
    return {m for m in found if m and _path(m).is_file()}


@cache
def _module_imports(module):
    return frozenset(_imports(_tree(module), module))


def _commands(tree):
    return {n.name: n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name.startswith("cmd_")}


@cache
def job_modules(stage):
    """Every rlvr module that `python -m rlvr <stage>` runs, sorted ("demos.clipping": a module
    of the package rlvr/demos/)."""
    cli = _tree("cli")
    commands = _commands(cli)
    if f"cmd_{stage}" not in commands:
        raise ValueError(f"rlvr.cli has no cmd_{stage}")
    todo = _imports(commands[f"cmd_{stage}"], "cli") | _imports(_tree("__main__"), "__main__")
    for stmt in cli.body:  # module-level code of cli.py, not the functions' bodies
        if not isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            todo |= _imports(stmt, "cli")
    seen = {"__init__", "__main__", "cli"}
    while todo:
        module = todo.pop()
        if module not in seen:
            seen.add(module)
            todo |= _module_imports(module)
    return tuple(sorted(seen))


def _other_stage(node, stage):
    """Whether a statement sets up only other stages: it names some cmd_<x> and not cmd_<stage>."""
    names = {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and n.id.startswith("cmd_")}
    return bool(names) and f"cmd_{stage}" not in names


def _parser_blocks(body):
    """build_parser's statements in blocks: a subcommand's (`s = sub.add_parser(...)` and the
    `s.<method>(...)` calls after it), and every other statement (`job(...)`, a loop, a helper)
    a block of its own."""
    blocks, open_block = [], False
    for stmt in body:
        call = stmt.value if isinstance(stmt, ast.Assign | ast.Expr) else None
        func = getattr(call, "func", None)
        on_s = isinstance(stmt, ast.Expr) and isinstance(func, ast.Attribute) \
            and isinstance(func.value, ast.Name) and func.value.id == "s"
        if open_block and on_s:
            blocks[-1].append(stmt)
        else:
            blocks.append([stmt])
            open_block = isinstance(func, ast.Attribute) and func.attr == "add_parser"
    return blocks


@cache
def _cli(stage):
    """The hash of the cli.py code a stage runs: its own cmd_<stage>, none of the others, of
    build_parser only what sets up this stage and what all stages share, and all of it without
    help texts (a help text, or another stage's new option, is no change of what a job computes)."""
    tree = _copy(_tree("cli"))
    tree.body = [n for n in tree.body if not (isinstance(n, ast.FunctionDef) and n.name.startswith("cmd_")
                                              and n.name != f"cmd_{stage}")]
    for fn in tree.body:
        if isinstance(fn, ast.FunctionDef) and fn.name == "build_parser":
            fn.body = [stmt for block in _parser_blocks(fn.body)
                       if not any(_other_stage(stmt, stage) for stmt in block) for stmt in block]
    for n in ast.walk(tree):
        if isinstance(n, ast.Call):
            n.keywords = [k for k in n.keywords if k.arg != "help"]
    return _code(tree)


def _registration(stmt):
    """(name, the estimator(...) call) of a registration: `@estimator("name", ...)` on a function,
    or `estimator("name", ...)(fn)`, a second name for a function registered above; else None."""
    calls = []
    if isinstance(stmt, ast.FunctionDef):
        calls = [d for d in stmt.decorator_list if isinstance(d, ast.Call)]
    elif (isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call)
          and isinstance(stmt.value.func, ast.Call)):
        calls = [stmt.value.func]
    return [(c.args[0].value, c) for c in calls if getattr(c.func, "id", None) == "estimator" and c.args]


def _without_display(call):
    call = _copy(ast.Module(body=[ast.Expr(call)], type_ignores=[])).body[0].value
    call.keywords = [k for k in call.keywords if k.arg not in DISPLAY]
    return call


@cache
def _estimators():
    """(hash of the shared code of estimators.py, {name: hash of its estimator function},
    [(name, {display keyword: value})] in registration order)."""
    tree = _tree("estimators")
    functions = {n.name: n for n in tree.body if isinstance(n, ast.FunctionDef)}
    shared, own, shown = [], {}, []
    for stmt in tree.body:
        registered = _registration(stmt)
        if not registered:
            shared.append(stmt)
            continue
        fn = stmt if isinstance(stmt, ast.FunctionDef) else functions[stmt.value.args[0].id]
        body = _copy(ast.Module(body=[fn], type_ignores=[])).body[0]
        body.decorator_list = [_without_display(d) if isinstance(d, ast.Call) else d
                               for d in body.decorator_list]
        for name, call in registered:
            own[name] = _sha(ast.dump(_without_display(call)) + _code(body))
            shown.append((name, {k.arg: ast.literal_eval(k.value)
                                 for k in call.keywords if k.arg in DISPLAY}))
    return _code(ast.Module(body=shared, type_ignores=[])), own, shown


def _hash(modules, methods, stage):
    parts = []
    for module in modules:
        if module == "estimators":
            shared, own, _ = _estimators()
            unknown = sorted(set(methods) - set(own))
            if unknown:
                raise ValueError(f"no estimator {unknown} in rlvr/estimators.py")
            parts += [f"estimators:{shared}"] + [f"estimators.{m}:{own[m]}" for m in sorted(set(methods))]
        elif module == "cli":
            parts.append(f"cli:{_cli(stage)}")
        else:
            parts.append(f"{module}:{_module_code(module)}")
    return _sha("\n".join(parts))[:16]


@cache
def _module_code(module):
    """A whole module's code hash, once per process: every stage and estimator set shares it."""
    return _code(_tree(module))


# versions by "code <stage> <methods>" / "display <methods>": those read back for this very
# source (use_saved), and those computed by this process (what save_versions writes)
_saved, _computed = {}, {}
_key = None  # the source they hold for (_source_key), taken before any version is computed


def _remembered(key, compute):
    if key not in _saved:
        _computed[key] = compute()
    return _saved.get(key) or _computed[key]


@cache
def code_version(stage, methods=()):
    """"<modules>:<hash>" of the code `python -m rlvr <stage>` runs with these estimators."""
    def compute():
        modules = job_modules(stage)
        return f"{','.join(modules)}:{_hash(modules, methods, stage)}"

    return _remembered(f"code {stage} {','.join(methods)}", compute)


@cache
def display_version(methods):
    """A hash of how tables and figures show these estimators: each one's labels, its family and
    its place in the family (which picks its colour, rlvr/style.py). A relabel changes it; an
    estimator added after the others of its family does not."""
    return _remembered(f"display {','.join(methods)}", lambda: _display_version(methods))


def _display_version(methods):
    _, _, shown = _estimators()
    families, entries = {}, []
    for name, display in shown:
        family = display.get("family", "other")
        place = families.setdefault(family, [])
        place.append(name)
        if name in methods:
            entries.append(f"{name}:{sorted(display.items())}:{len(place) - 1}")
    return _sha("\n".join(sorted(entries)))[:16]


def _source_key():
    """What the saved versions hold for: this source, parsed by this Python (ast.dump's text, so
    the hashes, may differ between Python versions)."""
    return f"{source_fingerprint()} python{sys.version_info[0]}.{sys.version_info[1]}"


def use_saved(path):
    """Take the versions saved at path (a JSON file, save_versions') if they were computed from
    this very source; computing them again parses every module (~0.7 s a Snakefile parse)."""
    global _key
    _key = _source_key()
    try:
        saved = json.loads(Path(path).read_text())
    except (OSError, ValueError):
        return
    if isinstance(saved, dict) and saved.get("source") == _key:
        _saved.update(saved.get("versions", {}))


def save_versions(path):
    """Write the versions this process has read or computed to path (atomically), for the next
    parse of the same source."""
    if not _computed or _key is None or _source_key() != _key:  # nothing new, or the source changed meanwhile
        return
    path = Path(path)
    text = json.dumps({"source": _key, "versions": {**_saved, **_computed}}, sort_keys=True)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(text)
    os.replace(tmp, path)


def source_fingerprint():
    """A hash of the bytes of every rlvr source file. The Snakefile takes it before it computes
    any code version and hands it to the jobs (RLVR_SOURCE): a job that finds the same bytes
    on disk runs the very code that was versioned, and needs no `check` (a few milliseconds
    against a third of a second of parsing)."""
    h = hashlib.sha256()
    for path in sorted(PACKAGE.rglob("*.py")):
        h.update(f"{path.relative_to(PACKAGE)}\0".encode() + path.read_bytes() + b"\0")
    return h.hexdigest()[:32]


def check(version, stage, methods=()):
    """The version of the same modules' code as it is on disk now (compare with `version`)."""
    modules = version.partition(":")[0].split(",")
    if not all(_path(m).is_file() for m in modules):
        return "(a module is gone)"
    return f"{','.join(modules)}:{_hash(modules, methods, stage)}"
