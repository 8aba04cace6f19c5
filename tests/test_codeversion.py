"""The cache's code dependency (rlvr/codeversion.py): a job's code is the import closure of its
stage's module, exactly; the facts read off a module hold only for its bytes."""

import json
import shutil
import subprocess

import pytest
from conftest import PYTHON, REPO

from rlvr import codeversion

STAGES = sorted(p.stem for p in (REPO / "rlvr" / "jobs").glob("*.py") if not p.stem.startswith("_")
                and p.stem != "__init__")


@pytest.fixture
def package(tmp_path, monkeypatch):
    """codeversion reading a private copy of rlvr/, which a test may edit."""
    copy = tmp_path / "rlvr"
    shutil.copytree(REPO / "rlvr", copy, ignore=shutil.ignore_patterns("__pycache__"))
    monkeypatch.setattr(codeversion, "PACKAGE", copy)
    reread()
    yield copy
    reread()


def reread():
    """Forget what this process read of the source (it is read once a process)."""
    codeversion.job_modules.cache_clear()
    codeversion.code_version.cache_clear()


def versions():
    reread()
    return {stage: codeversion.code_version(stage, ("grpo",) if stage in ("train", "gradstats") else ())
            for stage in STAGES}


@pytest.mark.slow
def test_an_edit_of_each_module_replans_exactly_the_stages_that_import_it(package):
    """For every module of rlvr/: a statement appended to it changes the code version of the
    stages whose closure holds it and of no other; a comment or a docstring changes none."""
    assert set(STAGES) == {"task", "reference", "exact", "gradstats", "train", "aggregate", "render",
                           "net_base", "net_train", "finite_step"}
    closure = {stage: set(codeversion.job_modules(stage)) for stage in STAGES}
    before = versions()
    modules = sorted(p.relative_to(package).with_suffix("").as_posix().replace("/", ".")
                     .removesuffix(".__init__") for p in package.rglob("*.py"))
    for module in modules:
        path = codeversion._path(module)
        text = path.read_text()
        path.write_text(text + "\n# a comment\n")
        assert versions() == before, module
        path.write_text(text + "\nEDITED = 1\n")
        changed = {stage for stage, v in versions().items() if v != before[stage]}
        assert changed == {stage for stage in STAGES if module in closure[stage]}, module
        path.write_text(text)
    # what a user would expect of the main modules
    assert {s for s in STAGES if "objective" in closure[s]} == {"train", "render", "net_train", "finite_step"}
    assert "cli" not in set().union(*closure.values())
    assert {s for s in STAGES if "training" in closure[s]} == {"train"}
    # the network's code is the network's jobs' alone (its row specs also render demo 17)
    assert {s for s in STAGES if "net.train" in closure[s]} == {"net_train"}
    assert {s for s in STAGES if "net.base" in closure[s]} == {"net_base", "net_train"}
    assert {s for s in STAGES if "net.specs" in closure[s]} == {"net_base", "net_train", "render"}


def test_an_estimator_counts_for_the_jobs_that_run_it_and_a_knob_for_none(package):
    def version(method):
        reread()
        return codeversion.code_version("train", (method,))

    def train():
        return version("rloo"), version("grpo")

    before = train()
    group = {m: version(m) for m in ("group", "dr_grpo")}  # one function
    estimators = package / "estimators.py"
    estimators.write_text(estimators.read_text().replace("label=\"GRPO\",", "label=\"GRPO!\","))
    assert train() == before
    mine = '\n\n@estimator("mine")\ndef mine(r, ctx):\n    return r\n'
    estimators.write_text(estimators.read_text() + mine)
    assert train() == before
    text = estimators.read_text()
    estimators.write_text(text.replace("return r - _group_mean(r)", "return r - 0", 1))
    assert text != estimators.read_text()
    assert version("grpo") == before[1]  # GRPO is not the group mean
    assert all(version(m) != v for m, v in group.items())
    knobs = package / "knobs.py"
    knobs.write_text(knobs.read_text().replace(
        "\n)\nKNOBS =", '\n    Knob("my_knob", 0.0, "mine", {"type": "number"}, token="mine"),\n)\nKNOBS ='))
    assert "my_knob" in knobs.read_text()
    assert version("grpo") == before[1]


def test_saved_facts_hold_only_for_the_bytes_they_were_read_from(tmp_path):
    """A run's start saves what it read off each module (.snakemake/rlvr.code-facts.json), keyed
    by the module's bytes: a module edited since is read again; a damaged file is ignored."""
    copy = tmp_path / "p" / "rlvr"
    shutil.copytree(REPO / "rlvr", copy, ignore=shutil.ignore_patterns("__pycache__"))
    show = ("import sys\nfrom rlvr import codeversion as cv\ncv.use_saved(sys.argv[1])\n"
            "print(cv.code_version('train', ('grpo',)))\ncv.save(sys.argv[1])\n")

    def version(saved):
        return subprocess.run([PYTHON, "-c", show, str(saved)], cwd=copy.parent, capture_output=True,
                              text=True, check=True).stdout.strip()

    fresh = version(tmp_path / "none.json")
    saved = tmp_path / "facts.json"
    assert version(saved) == fresh and version(saved) == fresh
    facts = json.loads(saved.read_text())
    assert len(facts) == len(codeversion.job_modules("train"))
    training = copy / "training.py"
    training.write_text(training.read_text() + "\nEDITED = 1\n")
    edited = version(tmp_path / "other.json")
    assert edited != fresh and version(saved) == edited
    saved.write_text("{not json")
    assert version(saved) == edited
