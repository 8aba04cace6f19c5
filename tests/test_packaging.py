"""environment.yml lists what pyproject.toml does (no conda channel is reachable to check it)."""

import re
import subprocess
import tomllib

import yaml
from conftest import REPO

# pip's name -> conda-forge's, where they differ
CONDA_NAMES = {"torch": "pytorch"}


def _name(requirement):
    return re.split(r"[<>=!~\[ ;]", requirement.strip(), maxsplit=1)[0].lower()


def test_environment_yml_matches_pyproject():
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    wanted = {CONDA_NAMES.get(_name(r), _name(r)): r
              for r in project["dependencies"] + project["optional-dependencies"]["test"]}
    env = yaml.safe_load((REPO / "environment.yml").read_text())
    conda, pip = {}, []
    for dep in env["dependencies"]:
        if isinstance(dep, dict):
            pip += dep.get("pip", [])
        else:
            conda[_name(dep)] = dep
    assert "python" in conda and ">=3.11" in conda["python"].replace(" ", "")
    conda.pop("python")
    conda.pop("pip", None)
    assert set(conda) == set(wanted), set(conda) ^ set(wanted)
    for name, req in wanted.items():  # same version bounds, conda spelling without spaces
        bounds = re.sub(r"^[A-Za-z0-9_.-]+", "", req).replace(" ", "")
        assert conda[name].replace(" ", "").endswith(bounds), (conda[name], req)
    assert "-e ." in [p.strip() for p in pip], "environment.yml must pip-install rlvr itself"


def test_the_docs_name_no_commit_of_this_project_and_no_issue():
    """README, GUIDE and FINDINGS describe the project as it is, for a reader who never saw its
    history: no commit of this repository (a peer's commit, named where its code is quoted, is
    another repository's: git does not know it here) and no issue number."""
    for doc in ("README.md", "GUIDE.md", "FINDINGS.md"):
        text = (REPO / doc).read_text()
        assert not re.search(r"\bissue (\d+|'s)", text, re.I), doc
        for word in set(re.findall(r"\b[0-9a-f]{7,40}\b", text)):
            if re.search(r"[a-f]", word) and re.search(r"\d", word):
                known = subprocess.run(["git", "-C", str(REPO), "cat-file", "-e", f"{word}^{{commit}}"],
                                       capture_output=True).returncode == 0
                assert not known, f"{doc} names {word}, a commit of this project"
