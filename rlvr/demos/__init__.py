"""The demos, in order: the one list of them. Everything else derives from it: the config's
tables and figures, the training experiments that come from a `rows:` list, the pipeline's
rules and report, the benchmark's lecture config, the tests.

A demo is one module here (copy one): NUMBER (its place in the order: "demo 3", the table
demo3_training; declared once, so a demo inserted between others renumbers none silently),
TITLE (its report heading), SWITCHABLE (its config section has `enabled`: the section of its name,
or CONFIG_SECTION where the module names another; a section the schema file lacks is made),
FRAMES (the results its table, claims and figures read: all it is given to draw;
tests/test_render.py checks it), ROWS (that section's `rows:` list trains rows whose experiment
is the demo's name; CONFIG then holds the section's default seeds and rows, which no config file
copies), TEXT (its table's strings in English and Chinese), `table(frames, L)` ->
(title, [(subtitle, head, rows)], footer) or None where the results hold none of its data, and
FIGURES {name: (draw(frames) -> Figure, the frames it needs)}, each with a caption in
workflow/report/<name>.rst, and optionally `claims(frames)` -> [rlvr.claims.Claim], the sentences
FINDINGS.md quotes. A demo whose section is not a `rows:` list but trains makes its rows with
`train_rows(section, row)` and checks its section with `check_section(section, task, checks)`
(group_size, dynamic_sampling). A demo that reads rows of other demos names them in READS (it is
given those rows too: Demo.frames), and may say which of their rows with `reads(row)`
(demo 17 derives both from the rows its predictions read). Add its module to MODULES below: a
demo with ROWS needs nothing else (GUIDE.md's recipe, which tests/test_recipe.py follows);
another demo's section goes in workflow/schemas/config.schema.yaml.
"""

from typing import NamedTuple

from ..io import RESULT_FILES
from . import (
    clipping,
    dynamic_sampling,
    gradients,
    group_size,
    kl_penalty,
    loss_aggregation,
    lr_sweep,
    narrowing_remedies,
    negative_samples,
    network,
    off_policy,
    passk_after_training,
    policy_losses,
    rank_bias,
    reference,
    shared_policy,
    spurious_rewards,
    training,
)

MODULES = (clipping, dynamic_sampling, gradients, group_size, kl_penalty, loss_aggregation, lr_sweep,
           narrowing_remedies, negative_samples, network, off_policy, passk_after_training, policy_losses,
           rank_bias, reference, shared_policy, spurious_rewards, training)


class Demo(NamedTuple):
    number: int
    module: object

    @property
    def name(self):
        """The demo's name: its module's, its config section's where it has one."""
        return self.module.__name__.rpartition(".")[2]

    @property
    def table_name(self):
        """Its table's file name under results/tables/ (without suffix)."""
        return f"demo{self.number}_{self.name}"

    @property
    def category(self):
        """Its figures' heading in the report (numbered: the report sorts headings as text)."""
        return f"{self.number:02d} {self.module.TITLE}"

    @property
    def section(self):
        """The config section whose `enabled` turns it off (None: always on)."""
        return getattr(self.module, "CONFIG_SECTION", self.name) if self.module.SWITCHABLE else None

    @property
    def figures(self):
        return self.module.FIGURES

    @property
    def experiment(self):
        """The `experiment` of its training rows (their files' paths and column)."""
        return getattr(self.module, "EXPERIMENT", self.name)

    def frames(self, results):
        """What it reads of results ({frame: DataFrame}, every demo's rows): each frame its module
        declares (pass@k with the reference's), a trained frame's rows those of its own experiment
        and of the demos it READS that its `reads(row)` takes (all of theirs where it has none)."""
        from ..io import JOB_PARTS

        needs = set(self.module.FRAMES) | ({"reference"} if "passk" in self.module.FRAMES else set())
        others = [d.experiment for d in DEMOS if d.name in getattr(self.module, "READS", ())]
        taken = {}
        for name, frame in results.items():
            if name not in needs:
                continue
            if name in JOB_PARTS:
                frame = frame[_rows_read(frame, self.experiment, others, getattr(self.module, "reads", None))]
                if not len(frame):  # no rows of its: as if the frame were not given
                    continue
                frame = frame.reset_index(drop=True)
            taken[name] = frame
        return taken

    def make_table(self, frames, lang="en"):
        """(table name, title, parts, footer), or None if the results hold none of its data."""
        from ..render import labels

        out = _unless_missing(frames, self.module.table, frames, labels(lang, self.module.TEXT, self.number))
        return None if out is None else (self.table_name, *out)

    def claims(self, frames):
        """Its claims computed from the results, keys prefixed "<demo name>." ([] if it makes none)."""
        make = getattr(self.module, "claims", None)
        made = _unless_missing(frames, make, frames) if make else None
        return [c._replace(key=f"{self.name}.{c.key}") for c in made or []]


def _rows_read(frame, own, others, reads):
    """[len(frame)] bool: the rows of experiment `own`, and those of the experiments `others`
    that reads(row) takes (every one where reads is None); reads is asked once per distinct row
    of knobs (the first record of each), not once per record."""
    from types import SimpleNamespace

    import numpy as np
    import pandas as pd

    from ..specs import TrainRow

    mask = (frame["experiment"] == own).to_numpy().copy()
    theirs = frame["experiment"].isin(others).to_numpy()
    if reads is None or not theirs.any():
        return mask | theirs
    sub = frame.loc[theirs, [c for c in frame.columns if c in TrainRow.__dataclass_fields__]]
    key = np.zeros(len(sub), np.int64)  # each distinct row of knobs a number: one column at a time
    for column in sub.columns:
        codes, values = pd.factorize(sub[column], use_na_sentinel=False)
        key = pd.factorize(key * len(values) + codes)[0]
    _, first = np.unique(key, return_index=True)
    taken = [reads(SimpleNamespace(**sub.iloc[i].to_dict())) for i in first]
    mask[theirs] = np.asarray(taken, bool)[np.searchsorted(key[first], key)]
    # pass@k's step-0 rows (method "reference", io.with_reference_rows) of each experiment it reads
    reference = (frame["method"] == "reference").to_numpy() if "method" in frame.columns else False
    read = frame.loc[mask & ~reference, "experiment"].unique()
    return mask | (reference & frame["experiment"].isin(read).to_numpy())


def _unless_missing(frames, fn, *args):
    """fn(*args), or None where it needs one of the results that frames does not hold (a demo
    computes nothing without its data; any other KeyError is a bug and is raised)."""
    try:
        return fn(*args)
    except KeyError as err:
        if err.args and err.args[0] in RESULT_FILES and err.args[0] not in frames:
            return None
        raise


# in the order of their numbers, which run 1, 2, ... with none twice (a demo added with a number
# another has is refused here, not labelled wrong)
DEMOS = tuple(sorted((Demo(module.NUMBER, module) for module in MODULES), key=lambda demo: demo.number))
if [demo.number for demo in DEMOS] != list(range(1, len(DEMOS) + 1)):
    raise ImportError(f"rlvr/demos/: the demos' NUMBERs are {[d.number for d in DEMOS]}, "
                      f"not 1 .. {len(DEMOS)} once each")
