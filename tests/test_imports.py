"""The rlvr package's import graph has no cycle (issue 34): no module imports, directly or
through others, a module that imports it. Every import statement counts, those inside functions
too (a lazy import is still a dependency: rlvr/codeversion.py counts it in a job's code)."""

import ast

from conftest import REPO

PACKAGE = REPO / "rlvr"


def module_name(path):
    parts = path.relative_to(PACKAGE).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts) or "__init__"


def imports_of(path, modules):
    """The rlvr modules the file at path imports, by any import statement in it."""
    here = module_name(path).split(".") if path.name == "__init__.py" else module_name(path).split(".")[:-1]
    if here == ["__init__"]:
        here = []
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = here[:len(here) - (node.level - 1)]
            elif (node.module or "").split(".")[0] == "rlvr":
                base = []
                node = ast.ImportFrom(module=node.module.partition(".")[2] or None, names=node.names)
            else:
                continue
            target = base + (node.module.split(".") if node.module else [])
            for alias in node.names:  # `from . import x`: the module x; `from .x import f`: x
                name = ".".join([*target, alias.name])
                found.add(name if name in modules else ".".join(target) or "__init__")
        elif isinstance(node, ast.Import):
            found |= {a.name.partition(".")[2] for a in node.names if a.name.startswith("rlvr.")}
    return {m for m in found if m in modules} - {module_name(path)}


def cycle(graph):
    """One cycle of the graph ({module: imports}) as a list of modules, or None."""
    state, stack = {}, []

    def visit(m):
        state[m] = "open"
        stack.append(m)
        for n in sorted(graph[m]):
            if state.get(n) == "open":
                return stack[stack.index(n):] + [n]
            if n not in state and (found := visit(n)):
                return found
        state[m] = "done"
        stack.pop()
        return None

    for m in sorted(graph):
        if m not in state and (found := visit(m)):
            return found
    return None


def test_the_import_graph_has_no_cycle():
    paths = sorted(PACKAGE.rglob("*.py"))
    modules = {module_name(p) for p in paths}
    graph = {module_name(p): imports_of(p, modules) for p in paths}
    assert "demos" in graph["report"] and "config" in graph["cli"]  # a lazy import (cmd_config's) counts
    assert cycle(graph) is None, " -> ".join(cycle(graph))


def test_the_check_finds_a_cycle():
    """The check above can fail: a cycle through three modules is found."""
    assert cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": set()}) == ["a", "b", "c", "a"]
    assert cycle({"a": {"b"}, "b": set()}) is None
