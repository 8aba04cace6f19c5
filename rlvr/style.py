"""The project's figure style: one colour per method in every figure, a hue per family.

A method's colour depends only on the registry (its family and its place among that family's
estimators), never on which methods a figure happens to show, so "GRPO" is the same orange in
every panel of every figure. A user's estimator (family "other") gets a colour of its own too.
"""

from .estimators import ESTIMATORS, FAMILIES
from .importance import IS_CORRECTIONS

# related hues per family, darkest first; enough shades for the registered estimators
PALETTES = {
    "no baseline": ["#222222", "#6b6b6b", "#a0a0a0"],
    "baseline": ["#08306b", "#2171b5", "#4292c6", "#6baed6", "#1b7e8c", "#41b6c4", "#9ecae1"],
    "group-normalised": ["#d94801", "#a63603", "#fd8d3c", "#fdae6b"],
    "batch-normalised": ["#006d2c", "#41ab5d", "#a1d99b"],
    "pass@k": ["#54278f", "#807dba", "#bcbddc", "#3f007d"],
    # PSR dark olive, NSR gold, W-REINFORCE olive green: told apart in one figure (demo 13)
    "sample sign": ["#5a4a00", "#c99a00", "#8c9400"],
    "other": ["#8c510a", "#c51b7d", "#bf812d", "#de77ae", "#8e0152", "#dfc27d"],
}
assert set(PALETTES) == set(FAMILIES)
# the corrections of off-policy rollouts (rlvr/importance.py), one colour each in every figure,
# and a shade of it for the correction with a lower bound of its own (is_cap_low)
CORRECTIONS = {"none": ("#6b6b6b", "#a0a0a0"), "full": ("#2171b5", "#6baed6"),
               "truncated": ("#d94801", "#fdae6b"), "masked": ("#6a51a3", "#3f007d"),
               "masked_renorm": ("#9e9ac8", "#bcbddc")}
assert set(CORRECTIONS) == set(IS_CORRECTIONS)
REFERENCE = {"color": "black", "ls": "--"}  # the step-0 policy, wherever it appears

# figure sizes (inches) for a paper: one column and two columns wide
COLUMN, PAGE = 3.4, 7.0
RC = {
    "font.size": 8, "axes.titlesize": 8, "axes.labelsize": 8, "legend.fontsize": 7,
    "xtick.labelsize": 7, "ytick.labelsize": 7, "lines.linewidth": 1.3, "lines.markersize": 4,
    "axes.grid": True, "grid.alpha": 0.3, "axes.spines.top": False, "axes.spines.right": False,
    "legend.frameon": False, "figure.dpi": 100, "savefig.dpi": 200,
    "pdf.fonttype": 42,  # TrueType in the PDF: text stays text (editable, searchable)
}


def family(method):
    """A method's family (registered with it; an unregistered name: "other")."""
    spec = ESTIMATORS.get(method)
    return spec.family if spec else "other"


def colour(method):
    """The colour of a method: a shade of its family's hue, by its place in the family."""
    its_family = family(method)
    members = [m for m, s in ESTIMATORS.items() if s.family == its_family]
    shades = PALETTES[its_family]
    i = members.index(method) if method in members else len(members)
    return shades[i % len(shades)]


MARKERS = ("o", "s", "^", "D", "v", "P", "X", "*")  # shapes that tell coinciding curves apart


def marker(method):
    """A method's marker: a shape per place in its family (registered order), so that methods of
    one family, whose colours are shades of one hue, differ in shape too."""
    its_family = family(method)
    members = [m for m, s in ESTIMATORS.items() if s.family == its_family]
    return MARKERS[(members.index(method) if method in members else len(members)) % len(MARKERS)]


# an optimizer (a row's `optimizer`: rlvr/optimizers.py, the network's rlvr/net/specs.py) as tables,
# claims and figures name it
OPTIMIZER_LABELS = {"sgd": "SGD", "adam": "Adam"}


def label(method):
    """How figures name a method (registered with it; an unregistered name as it is)."""
    spec = ESTIMATORS.get(method)
    return spec.label if spec else method


def correction_colour(correction, variant=False):
    """The colour of an off-policy correction (importance.IS_CORRECTIONS); variant: its shade for
    a lower bound of its own."""
    return CORRECTIONS[correction][variant]
