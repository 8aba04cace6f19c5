"""Issue 15: one colour per method in every figure, PDF beside every PNG, labels registered with
the estimators. Figures tag what they draw for a method with gid "method:<name>"."""

import matplotlib.colors as mcolors
import pandas as pd
import pytest

from rlvr import style
from rlvr.estimators import ESTIMATORS, FAMILIES, estimator
from rlvr.report import draw_figure, figures, write_figures


def method_artists(fig, axes=None):
    """[(axes index, method, colour hex)] of every artist tagged with a method (in fig, or in axes)."""
    found = []
    for i, ax in enumerate(fig.axes if axes is None else axes):
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
    from test_network import MICRO

    from rlvr.compute import compute_all
    from rlvr.config import validate_config

    cfg = yaml.safe_load((REPO / "config" / "test.yaml").read_text())
    methods = list(ESTIMATORS)
    cfg["training"]["rows"] = [{"method": methods, "lr": 2.0}, {"method": ["none", "grpo"], "lr": 4.0},
                               {"method": ["none", "rloo"], "lr": 2.0, "reward_offset": 5.0}]
    cfg["lr_sweep"]["rows"] = [{"method": ["none", "learned", "rloo", "grpo"], "lr": [1.0, 4.0]},
                               {"method": ["none", "grpo"], "lr": 0.03, "optimizer": "adam"}]
    exact = [m for m in methods if "logp" not in ESTIMATORS[m].needs]  # demo 2: what its exact moments cover
    cfg["gradient_stats"]["cases"] = [{"reward_offsets": [0.0, 1.0], "methods": exact, "levels": ["medium"]},
                                      {"reward_offsets": [0.0], "methods": ["grpo"],
                                       "levels": ["very_hard", "easy"]}]
    cfg["gradient_stats"]["exact_curve"] = {"methods": exact, "n_points": 9}
    # demos 8-10, set here in full (not from test.yaml): each figure's every kind of line
    small = {"enabled": True, "steps": 10, "prompts_per_step": 4, "G": 4, "seeds": [0, 1, 2]}
    grpo = {"method": "grpo", "lr": 2.0}
    cfg["clipping"] = small | {"rows": [grpo | {"epochs": [1, 2, 4], "clip_high": [0.2, 0.28, 0.4]}]}
    cfg["kl_penalty"] = small | {"rows": [grpo, grpo | {"kl_beta": [0.1, 1.0], "kl_estimator": ["k1", "k3"],
                                                        "kl_placement": ["loss", "reward"]}]}
    modes = ["seq-mean-token-sum-norm", "seq-mean-token-mean", "token-mean"]
    cfg["loss_aggregation"] = small | {"rows": [grpo | {"method": ["grpo", "dr_grpo"], "loss_agg": modes}]}
    cfg["shared_policy"] = small | {"rows": [{"method": ["none", "rloo", "grpo", "pkpo_k4"], "lr": 2.0,
                                              "shared_lr": [0.0, 0.5]}]}
    cfg["network"] = MICRO | {"rows": [{"method": ["grpo", "psr", "nsr"], "lr": 0.01},  # demo 17's lines
                                       {"method": "grpo", "lr": 0.01, "G": 2, "prompts_per_step": 8},
                                       {"method": "grpo", "lr": 0.01, "kl_beta": 1.0,
                                        "kl_placement": ["loss", "reward"]}]}
    return {k: v.to_pandas() for k, v in compute_all(validate_config(cfg)).items()}


@pytest.fixture(scope="module")
def drawn(results):
    return {name: draw_figure(name, results) for name in figures()}  # not pyplot's: freed with the dict


@pytest.mark.slow
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
    with pytest.raises(ValueError, match="'grpo' is registered already"):
        estimator("grpo")  # a second estimator under a taken name would replace the first silently
    assert "other" in FAMILIES


@pytest.mark.slow
def test_every_figure_is_written_as_png_and_pdf(results, tmp_path):
    names = ["passk_by_level", "lr_sweep"]
    paths = write_figures(results, tmp_path, names)
    assert sorted(p.name for p in paths) == sorted(f"{n}.{f}" for n in names for f in ("png", "pdf"))
    pdf = (tmp_path / "lr_sweep.pdf").read_bytes()
    assert pdf.startswith(b"%PDF") and b"CreationDate" not in pdf  # same bytes on every run
    again = write_figures(results, tmp_path / "again", ["lr_sweep"])
    assert again[1].read_bytes() == pdf


def curve_lines(ax, method):
    """The labelled lines of a method in a panel: {label: Line2D}."""
    return {line.get_label(): line for line in ax.get_lines()
            if line.get_gid() == f"method:{method}" and not line.get_label().startswith("_")}


def test_the_figures_of_demos_8_to_10_tag_the_methods_they_train(drawn, results):
    curves = results["curves"]
    for name, experiment in (("clipping", "clipping"), ("kl_penalty", "kl_penalty"),
                             ("loss_aggregation", "loss_aggregation"), ("entropy_vs_pass1", "training")):
        rows = curves[(curves["experiment"] == experiment) & (curves["reward_offset"] == 0)]
        tagged = {method for _, method, _ in method_artists(drawn[name])}
        assert tagged == set(rows["method"]), name
        assert all(any((a.get_gid() or "").startswith("method:") for a in ax.findobj())
                   for ax in drawn[name].axes), name  # no empty panel


def test_settings_of_one_method_keep_its_colour_paler_and_dashed(drawn):
    """ε_high (clipping) and β (KL penalty) are settings of GRPO, not other estimators: GRPO's
    colour, paler for the smaller settings, and a line style each."""
    for name, n in (("clipping", 3), ("kl_penalty", 2)):
        for ax in drawn[name].axes:
            if ax.get_title().startswith("its cost"):  # kl_penalty's trade-off panels: a line per estimator
                assert set(curve_lines(ax, "grpo")) == {"k1", "k3"}, ax.get_title()  # the config's estimators
                continue
            lines = curve_lines(ax, "grpo")
            assert len(lines) == n, (name, list(lines))
            assert {mcolors.to_hex(line.get_color()) for line in lines.values()} == {style.colour("grpo")}
            looks = [(line.get_alpha(), line.get_linestyle()) for line in lines.values()]
            assert len(set(looks)) == n, (name, looks)
            alphas = [alpha for alpha, _ in looks]
            assert alphas == sorted(alphas) and alphas[-1] == 1, (name, alphas)  # small to large: darker


def test_clipping_draws_the_paired_difference_to_mu_1(drawn, results):
    c = results["curves"]
    c = c[(c["experiment"] == "clipping") & (c["level"] == "all")]
    c = c.set_index(["seed", "step"])
    base = c[(c["epochs"] == 1) & (c["clip_high"] == c["clip_high"].min())]["pass1"]  # the μ = 1 run
    expected = (c[(c["epochs"] == 4) & (c["clip_high"] == 0.4)]["pass1"] - base).groupby("step").mean()
    fig = drawn["clipping"]
    top_right = fig.axes[1]  # rows: Δ pass@1, Δ entropy, clip fraction; columns: μ = 2, 4
    assert top_right.get_title() == "μ = 4 updates per batch"
    line = curve_lines(top_right, "grpo")["ε_high = 0.4"]
    assert line.get_xdata().tolist() == expected.index.tolist()
    assert line.get_ydata() == pytest.approx(expected.to_numpy())
    assert line.get_ydata()[0] == 0  # the same start


def test_loss_aggregation_has_a_panel_per_method_and_a_line_style_per_mode(drawn):
    fig = drawn["loss_aggregation"]
    for ax in fig.axes:
        methods = {method for _, method, _ in method_artists(fig, [ax])}
        assert len(methods) == 1
        lines = curve_lines(ax, methods.pop())
        assert len({line.get_linestyle() for line in lines.values()}) == len(lines) == 3
    assert len(fig.legends) == 1 and len(fig.legends[0].get_texts()) == 3


def test_entropy_vs_pass1_marks_the_start_once_per_panel(drawn, results):
    fig = drawn["entropy_vs_pass1"]
    start = [line for ax in fig.axes for line in ax.get_lines()
             if line.get_marker() == "o" and not line.get_gid()]  # the tagged ones: the last policies
    assert len(start) == len(fig.axes) > 1  # one per family
    assert sum(not line.get_label().startswith("_") for line in start) == 1  # in one legend
    c = results["curves"]
    step0 = c[(c["experiment"] == "training") & (c["level"] == "all") & (c["step"] == 0)]
    assert start[0].get_xdata()[0] == pytest.approx(step0["pass1"].iloc[0])
    assert start[0].get_ydata()[0] == pytest.approx(step0["entropy"].iloc[0])



@pytest.mark.parametrize("name", ["shared_policy", "passk_frontier"])
def test_demo_11_figures_tag_every_method_in_every_panel(drawn, results, name):
    methods = set(results["runs"].query("experiment == 'shared_policy'")["method"])
    per_panel = {}
    for ax, method, _ in method_artists(drawn[name]):
        per_panel.setdefault(ax, set()).add(method)
    shared_lrs = results["runs"].query("experiment == 'shared_policy'")["shared_lr"].nunique()
    assert len(per_panel) >= shared_lrs and all(found == methods for found in per_panel.values()), per_panel


def test_an_estimator_without_a_family_is_drawn_beside_grpo_and_identical_offsets_once(results):
    """Issue 38: a user's estimator (family "other") has its own panel in learning_curves and
    passk_trained, and that panel also draws GRPO, labelled, to compare; an offset row identical
    to its offset-0 row (RLOO) is drawn once, its label saying so. The user's rows are demo 3's
    group-mean rows renamed: a figure only reads the frames."""
    @estimator("test_other_method", min_G=2, label="my estimator")
    def mine(r, ctx):
        return r - r.mean(axis=1, keepdims=True)

    try:
        frames = dict(results)
        for name in ("curves", "passk"):
            mine_rows = frames[name].query("method == 'group'").assign(method="test_other_method")
            frames[name] = pd.concat([frames[name], mine_rows], ignore_index=True)
        for name in ("learning_curves", "passk_trained"):
            fig = draw_figure(name, frames)
            other = [ax for ax in fig.axes if ax.get_title() == "other"]
            assert other, name
            column = other[0].get_subplotspec().colspan
            panel = [ax for ax in fig.axes if ax.get_subplotspec().colspan == column]
            for ax in panel:
                tagged = {method for _, method, _ in method_artists(fig, [ax])}
                assert tagged == {"test_other_method", "grpo"}, (name, tagged)
            labels = [t.get_text() for ax in fig.axes if ax.get_legend() for t in ax.get_legend().get_texts()]
            assert "GRPO (to compare)" in labels, name
            rloo = [t for t in labels if t.startswith("RLOO")]
            assert rloo == ["RLOO, offset 0 and 5:\nidentical by construction"], (name, rloo)
    finally:
        del ESTIMATORS["test_other_method"]


def test_the_network_demo_reads_only_what_it_declares(results, tmp_path):
    """Demo 17's table, claims and figures read only its FRAMES (tests/test_render.py checks the
    others on the tiny config, where the network is off); its claims are the keys it lists."""
    from test_render import check_declared_reads

    from rlvr.demos import DEMOS, network

    check_declared_reads(results, [demo for demo in DEMOS if demo.module is network], tmp_path)
    keys = [c.key for c in network.claims(results)]
    assert set(keys) <= set(network.CLAIMS)
    # the rows that split the section's answers into other groups, and the KL row, are predictions
    new = {"smaller_groups", "kl_costs_pass1", "kl_keeps_passk", "kl_in_the_reward", "crossover_pass1"}
    assert new <= set(keys), keys


def figure_data(fig):
    """What a figure shows, comparable: each panel's title, labels and lines' points."""
    return [(ax.get_title(), ax.get_xlabel(), ax.get_ylabel(),
             [(line.get_label(), line.get_xydata().tolist()) for line in ax.get_lines()]) for ax in fig.axes]


def test_the_network_demo_reads_only_the_toy_rows_it_declares(results):
    """Demo 17's table, claims and figures from the toy rows its `reads` takes (all its rendering
    job is given) are those from every row: a toy row it reads but did not declare would change
    them, and a change of a row it does not read need not render it again."""
    from rlvr.demos import DEMOS, network

    demo = next(demo for demo in DEMOS if demo.module is network)
    toy = {"runs", "curves", "passk", "klgrad"}

    def declared(frame):
        keep = [row.experiment in network.READS and network.reads(row)
                for row in frame.itertuples(index=False)]
        return frame[keep]

    given = {name: declared(frame) if name in toy else frame for name, frame in results.items()}
    assert 0 < len(given["runs"]) < len(results["runs"][results["runs"]["experiment"].isin(network.READS)])
    toy_sides = [p.toy(results) for p in network.PREDICTIONS]  # with the network's rows or not
    assert sum(side is not None for side in toy_sides) >= 8, toy_sides  # the toy's side is read
    assert [p.toy(given) for p in network.PREDICTIONS] == toy_sides
    assert demo.make_table(given) == demo.make_table(results)
    assert demo.claims(given) == demo.claims(results)
    for name, (draw, _) in demo.figures.items():
        assert figure_data(draw(given)) == figure_data(draw(results)), name
