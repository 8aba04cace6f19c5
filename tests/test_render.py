"""The tables' layout and writer (rlvr/render.py) and the analysis they share (rlvr/analysis.py)."""

import html
import re

import numpy as np
import pandas as pd
import pytest

from rlvr import analysis as A
from rlvr import render as R
from rlvr import report
from rlvr.demos import DEMOS


def test_text_columns_line_up_with_wide_characters():
    lines = R._text_table(["方法", "x"], [["GRPO（除以组内标准差）", "1"], ["a", "22"]])
    from rlvr.text import display_width

    starts = {display_width(line[: line.rindex(cell)]) for line, cell in zip(lines, ["x", "1", "22"])}
    assert len(starts) == 1  # the second column starts at the same display column in every line


def test_a_demo_title_carries_its_number_from_the_registry():
    for demo in DEMOS:
        for lang in ("en", "zh"):
            title = R.labels(lang, demo.module.TEXT, demo.number)["title"]
            assert "{number}" not in title and str(demo.number) in title, (demo.name, lang)


def test_the_paired_difference_drops_unpartnered_seeds_and_keeps_order():
    runs = pd.DataFrame({"seed": [3, 1, 2], "x": [1.0, 5.0, 2.0]})
    base = pd.DataFrame({"seed": [1, 2, 9], "x": [4.0, 4.0, 0.0]})
    d = A.paired(runs, base, "x", on=("seed",))
    assert d["seed"].tolist() == [1, 2] and d["x"].tolist() == [1.0, -2.0]
    assert R.delta(runs, base, "x", 1) == f"{np.mean([1.0, -2.0]):+.1f} ± {A.se([1.0, -2.0]):.1f}"
    assert R.delta(runs, base.iloc[:0], "x", 1) == ""  # no baseline: no cell


def test_write_demo_writes_its_tables_and_claims_and_refuses_an_unknown_or_empty_demo(tmp_path):
    # only the reference's pass@k: every demo that needs another result has no table
    frames = {"reference": pd.DataFrame({"level": ["all"], "n_prompts": [8], "k": [1], "pass_at_k": [0.5]})}
    paths = report.write_demo("reference", frames, tmp_path)
    assert [p.name for p in paths] == [f"demo1_reference{suffix}" for suffix in R.TABLE_FORMATS] + \
        ["demo1_reference.claims.md"]
    page = (tmp_path / "demo1_reference.html").read_text()  # an HTML table per part, in a page
    md = (tmp_path / "demo1_reference.md").read_text().splitlines()
    md = [line for line in md if line.startswith("| ")]
    cells = [[html.unescape(c) for c in re.findall(r"<t[hd]>(.*?)</t[hd]>", row)]
             for row in re.findall(r"<tr>(.*?)</tr>", page)]
    assert cells == [[c.strip() for c in line.strip("| ").split(" | ")] for line in md]
    assert "<pre>" not in page and page.count("<table>") == md.count(md[0]) and "<title>Demo 1" in page
    with pytest.raises(ValueError, match="no demo 'nothing'; the demos: "):
        report.write_demo("nothing", frames, tmp_path)
    with pytest.raises(ValueError, match=r"no data for demo 3 \(training\)"):
        report.write_demo("training", frames, tmp_path)


class Reads(dict):
    """The results, noting every one that is looked up."""

    def __init__(self, frames):
        super().__init__(frames)
        self.read = set()

    def __getitem__(self, key):
        self.read.add(key)
        return super().__getitem__(key)

    def get(self, key, default=None):
        self.read.add(key)
        return super().get(key, default)

    def __contains__(self, key):
        self.read.add(key)
        return super().__contains__(key)


@pytest.mark.slow
def test_each_demo_declares_every_result_it_reads(tiny_in_process, tmp_path):
    """A demo's rendering job is given only the results its module's FRAMES names (so that a
    change elsewhere renders other demos alone): whatever its table, claims and figures look up
    (by [], get or in) is declared, so they compute from those alone what they would from all."""
    from rlvr.compute import read_results
    from rlvr.io import RESULT_FILES

    frames = read_results(tiny_in_process)
    assert set(frames) == {key for key in RESULT_FILES if not key.startswith("net_")}  # the network's: off
    check_declared_reads(frames, [demo for demo in DEMOS if demo.name != "network"], tmp_path)


def check_declared_reads(frames, demos, tmp_path):
    """Each demo reads only the results its FRAMES declare (test_network.py checks the network's)."""
    for demo in demos:
        reads = Reads(frames)
        report.write_demo(demo.name, reads, tmp_path / demo.name)  # its tables and claims
        for draw, _ in demo.figures.values():
            draw(reads)  # a Figure without pyplot: freed with it
        assert reads.read <= set(demo.module.FRAMES), (demo.name, reads.read - set(demo.module.FRAMES))
        assert {f for _, needs in demo.figures.values() for f in needs} <= set(demo.module.FRAMES), demo.name
