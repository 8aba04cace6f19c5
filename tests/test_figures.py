"""Issue 15: one colour per method in every figure, PDF beside every PNG, labels registered with
the estimators. Figures tag what they draw for a method with gid "method:<name>"."""

import matplotlib.colors as mcolors
import pytest

from rlvr import style
from rlvr.estimators import ESTIMATORS, FAMILIES, estimator
from rlvr.figures import FIGURES, draw_figure, write_figures


def method_artists(fig):
    """[(axes index, method, colour hex)] of every artist tagged with a method."""
    found = []
    for i, ax in enumerate(fig.axes):
        for artist in ax.findobj(lambda a: (a.get_gid() or "").startswith("method:")):
            method = artist.get_gid().removeprefix("method:")
            for getter in ("get_color", "get_facecolor", "get_edgecolor"):
                if hasattr(artist, getter):
                    c = getattr(artist, getter)()
                    c = c[0] if getattr(c, "ndim", 0) == 2 else c  # collections: [n, 4]
                    found.append((i, method, mcolors.to_hex(c, keep_alpha=False)))
                    break
    return found


@pytest.fixture(scope="module")
def results():
    """The tiny config with every registered estimator in every demo that compares them, and
    two offsets and two lrs of some (the line styles): each figure's busiest case, in seconds."""
    import yaml
    from conftest import REPO

    from rlvr.compute import compute_all
    from rlvr.config import validate_config

    cfg = yaml.safe_load((REPO / "config" / "test.yaml").read_text())
    methods = list(ESTIMATORS)
    cfg["training"]["rows"] = [{"method": methods, "lr": 2.0}, {"method": ["none", "grpo"], "lr": 4.0},
                               {"method": ["none", "rloo"], "lr": 2.0, "reward_offset": 5.0}]
    cfg["lr_sweep"]["rows"] = [{"method": ["none", "learned", "rloo", "grpo"], "lr": [1.0, 4.0]}]
    cfg["gradient_stats"]["cases"] = [{"reward_offsets": [0.0, 1.0], "methods": methods, "levels": ["medium"]},
                                      {"reward_offsets": [0.0], "methods": ["grpo"], "levels": ["very_hard", "easy"]}]
    cfg["gradient_stats"]["exact_curve"] = {"methods": methods, "n_points": 9}
    return {k: v.to_pandas() for k, v in compute_all(validate_config(cfg)).items() if k != "task"}


@pytest.fixture(scope="module")
def drawn(results):
    import matplotlib.pyplot as plt

    figs = {name: draw_figure(name, results) for name in FIGURES}
    yield figs
    for fig in figs.values():
        plt.close(fig)


def test_each_method_has_one_colour_in_every_figure(drawn):
    seen = {}
    for name, fig in drawn.items():
        for _, method, colour in method_artists(fig):
            assert colour == style.colour(method), (name, method, colour)
            seen.setdefault(method, set()).add(name)
    # the figures that compare estimators do tag them (else this test would check nothing)
    assert set(ESTIMATORS) <= set(seen)
    assert len({n for names in seen.values() for n in names}) >= 5


def test_no_two_methods_share_a_colour_in_a_panel(drawn):
    for name, fig in drawn.items():
        panel = {}
        for ax, method, colour in method_artists(fig):
            panel.setdefault((ax, colour), set()).add(method)
        shared = {k: v for k, v in panel.items() if len(v) > 1}
        assert not shared, (name, shared)


def test_registered_estimators_have_distinct_colours_and_labels():
    colours = [style.colour(m) for m in ESTIMATORS]
    labels = [style.label(m) for m in ESTIMATORS]
    assert len(set(colours)) == len(colours)
    assert len(set(labels)) == len(labels)


def test_a_users_estimator_gets_its_label_and_a_colour_of_its_own():
    @estimator("test_user_method", min_G=2, label="my estimator")
    def mine(r, ctx):
        return r - r.mean(axis=1, keepdims=True)

    try:
        assert style.label("test_user_method") == "my estimator"
        assert style.colour("test_user_method") not in {style.colour(m) for m in ESTIMATORS
                                                         if m != "test_user_method"}
    finally:
        del ESTIMATORS["test_user_method"]
    with pytest.raises(ValueError, match="family 'made up' is not one of"):
        estimator("x", family="made up")
    assert "other" in FAMILIES


def test_every_figure_is_written_as_png_and_pdf(results, tmp_path):
    names = ["passk_by_level", "lr_sweep"]
    paths = write_figures(results, tmp_path, names)
    assert sorted(p.name for p in paths) == sorted(f"{n}.{f}" for n in names for f in ("png", "pdf"))
    pdf = (tmp_path / "lr_sweep.pdf").read_bytes()
    assert pdf.startswith(b"%PDF") and b"CreationDate" not in pdf  # same bytes on every run
    again = write_figures(results, tmp_path / "again", ["lr_sweep"])
    assert again[1].read_bytes() == pdf
