"""Issue 34: GUIDE.md's recipes for a demo and for a knob, followed in a copy of the project. Each
touches only the files its bullet names before "Nothing else", as many as it says; then the copy's
config, registry, pipeline plan and the tests that count demos, rows and knobs accept the result.
"""

import os
import re
import shutil
import subprocess
import sys

import pytest
from conftest import REPO

GUIDE = (REPO / "GUIDE.md").read_text()
WORDS = {"one": 1, "two": 2, "three": 3}


def recipe(name):
    """The part of GUIDE's bullet **name** that says what to touch: (its paths, how many files)."""
    section = GUIDE.split("## How to add a demo, a knob or an estimator", 1)[1].split("\n## ", 1)[0]
    bullet = section.split(f"- **{name}**", 1)[1].split("\n- **", 1)[0]
    steps = bullet.split("Nothing else", 1)[0]
    count = re.search(r"(\w+) files", steps)
    return [p for p in re.findall(r"`([^`\s]+)`", steps) if "/" in p], WORDS[count.group(1)]


def named(path, paths):
    """Whether GUIDE's paths name path: itself, its folder (`rlvr/demos/`), or a pattern
    (`workflow/report/<figure>.rst`)."""
    return any(path == p or (p.endswith("/") and path.startswith(p) and "/" not in path[len(p):])
               or re.fullmatch(re.sub(r"<[^>]+>", "[^/]+", re.escape(p)), path) for p in paths)


def files(root):
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*"))
            if p.is_file() and "__pycache__" not in p.parts}


def touched(before, root):
    after = files(root)
    return sorted(p for p in before.keys() | after.keys() if before.get(p) != after.get(p))


def edit(path, old, new):
    text = path.read_text()
    assert text.count(old) == 1, (path, old)
    path.write_text(text.replace(old, new))


def run_in(root, *args):
    """python *args in the copy, on its rlvr (not this checkout's): the finished process."""
    proc = subprocess.run([sys.executable, *args], cwd=root, capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": str(root)})
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-3000:]
    return proc


DEMO = '''"""The demo "my demo": GRPO at lr 2, one row (tests/test_recipe.py writes it)."""

from .. import figures as F

NUMBER = {number}
TITLE = "my demo"
SWITCHABLE = True
FRAMES = ("runs",)
ROWS = True

CONFIG = {{
    "help": "GRPO at lr 2: one run per seed",
    "seeds": list(range(5)),
    "rows": [{{"method": "grpo", "lr": 2.0}}],
}}

TEXT = {{"en": {{"title": "Demo {{number}}: my demo", "head": ["method", "final pass@1"]}},
        "zh": {{"title": "演示 {{number}}：我的演示", "head": ["方法", "训练后 pass@1"]}}}}


def table(frames, L):
    runs = frames["runs"]
    mine = runs[runs["experiment"] == "my_demo"]
    rows = [[m, f"{{v:.3f}}"] for m, v in mine.groupby("method")["final_pass1"].mean().items()]
    return (L["title"], [("", L["head"], rows)], []) if rows else None


def my_demo(runs):
    fig, axes = F.subplots(1, 1)
    axes[0, 0].hist(runs[runs["experiment"] == "my_demo"]["final_pass1"])
    return fig


FIGURES = {{"my_demo": (lambda f: my_demo(f["runs"]), ("runs",))}}
'''


@pytest.mark.slow
def test_guides_recipes_add_a_demo_and_a_knob_touching_only_the_files_they_name(tmp_path):
    from rlvr.demos import DEMOS

    root = tmp_path / "project"
    root.mkdir()
    for name in ("Snakefile", "workflow", "rlvr", "config", "tests", "profiles"):
        copy = shutil.copytree if (REPO / name).is_dir() else shutil.copy2
        copy(REPO / name, root / name, **({"ignore": shutil.ignore_patterns("__pycache__")}
                                          if (REPO / name).is_dir() else {}))

    # a demo: its module, its registry line, its figure's caption
    paths, count = recipe("A demo")
    before = files(root)
    (root / "rlvr/demos/my_demo.py").write_text(DEMO.format(number=len(DEMOS) + 1))
    edit(root / "rlvr/demos/__init__.py", "from . import (\n", "from . import (\n    my_demo,\n")
    edit(root / "rlvr/demos/__init__.py", "MODULES = (", "MODULES = (my_demo, ")
    (root / "workflow/report/my_demo.rst").write_text("GRPO at lr 2: final pass\\@1 over seeds.\n")
    demo_files = touched(before, root)
    assert all(named(p, paths) for p in demo_files), (demo_files, paths)
    besides_captions = [p for p in demo_files if not p.startswith("workflow/report/")]
    assert len(besides_captions) == count <= 3, besides_captions

    # a knob of a row: its Knob, the line that reads it, its declared default in the tests
    paths, count = recipe("A knob of a row")
    before = files(root)
    edit(root / "rlvr/knobs.py", "\n)\nKNOBS =",
         '\n    Knob("entropy_bonus", 0.0, "β of an entropy bonus (0: none)",\n'
         '         {"type": "number", "minimum": 0}, token="entropy", objective=True),\n)\nKNOBS =')
    edit(root / "rlvr/objective.py", "        if gain is not None:\n",
         "        if obj.entropy_bonus:  # the score function's weight of H(π) = −E log π(y)\n"
         "            W = W - obj.entropy_bonus * np.take_along_axis(log_softmax(z), y, axis=1)\n"
         "        if gain is not None:\n")
    edit(root / "tests/test_knobs.py", '"loss_agg": "seq-mean-token-sum-norm",\n',
         '"loss_agg": "seq-mean-token-sum-norm", "entropy_bonus": 0.0,\n')
    knob_files = touched(before, root)
    assert all(named(p, paths) for p in knob_files), (knob_files, paths)
    besides_tests = [p for p in knob_files if not p.startswith("tests/")]
    assert len(besides_tests) == count <= 2, besides_tests

    # the copy's config, registry and rows know both; the tiny config runs the demo small
    out = run_in(root, "-c", """
from rlvr.config import asked, load_config, schema, train_rows
from rlvr.demos import DEMOS
from rlvr.training import make_row, train_seeds
from rlvr.task import make_task
assert DEMOS[-1].name == "my_demo" and DEMOS[-1] in asked(load_config()) and "my_demo" in DEMOS[-1].figures
full, tiny = load_config(), load_config("config/test.yaml")
assert full["my_demo"]["rows"][0]["method"] == "grpo" and full["my_demo"]["seeds"] == [0, 1, 2, 3, 4]
mine = [r for r in train_rows(tiny) if r.experiment == "my_demo"]
assert [(r.steps, r.seeds, r.G) for r in mine] == [(10, (0, 1), 4)], mine
assert "entropy_bonus" in schema()["$defs"]["row"]["properties"]
cfg = load_config()
cfg["training"]["rows"] = [{"method": "grpo", "lr": 2.0, "entropy_bonus": 0.5}]
from rlvr.config import validate_config
(row,) = [r for r in train_rows(validate_config(cfg)) if r.experiment == "training"]
assert row.entropy_bonus == 0.5 and "_entropy0.5" in row.row_path, row.row_path
task = make_task(P=8, M=4)
final = [train_seeds(task, make_row("grpo", 5, 4, 4, 2.0, [0], entropy_bonus=b))[0]["logits"]
         for b in (0.0, 1.0)]
assert (final[0] != final[1]).any()  # the knob is read
# the network's trainer does not read it: a network row that sets it is refused by name
from rlvr.config import ConfigError, network_jobs
net = {"enabled": True, "prompts_per_step": 4, "G": 4,
       "rows": [{"method": "grpo", "lr": 0.0001, "entropy_bonus": 0.5}]}
try:
    validate_config({**load_config("config/test.yaml"), "network": net})
    raise SystemExit("a network row took entropy_bonus")
except ConfigError as err:
    assert "network.rows[0]" in str(err) and "'entropy_bonus' is a knob of the toy's rows that the " \
        "network's trainer does not read" in str(err), err
net["rows"][0].pop("entropy_bonus")
assert not hasattr(network_jobs(validate_config({**load_config("config/test.yaml"), "network": net}))[1][0],
                   "entropy_bonus")
print("ok")
""").stdout
    assert out.strip() == "ok"

    # the plan of the tiny config trains the demo's row and draws its figure
    proc = run_in(root, "-m", "snakemake", "-n", "--configfile", "config/test.yaml",
                  "--workflow-profile", "none")
    assert "rule render:" in proc.stdout and "_my_demo.md" in proc.stdout, proc.stdout[-3000:]
    assert "results/runs/my_demo/grpo/" in proc.stdout

    # the tests that count demos, rows, seeds and knobs agree, in the copy, with no line added
    tests = ["tests/test_config.py::test_empty_config_gets_the_lecture_defaults",
             "tests/test_config.py::test_every_demo_module_is_complete_and_wired_through_its_config_section",
             "tests/test_knobs.py"]
    run_in(root, "-m", "pytest", "-q", "-n", "0", "-p", "no:cacheprovider", *tests)
