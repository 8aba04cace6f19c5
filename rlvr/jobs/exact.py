"""Exact E[g]/grad J against p for some estimators."""

import json

from .. import io
from ..gradstats import exact_curve_columns
from . import bound, log, name


def run(a):
    spec = json.loads(a.spec)
    io.write_table(a.out, exact_curve_columns(spec["methods"], spec["G"], spec["M"], spec["n_points"]),
                   bound(a, name(a.out)))
    log(f"exact E[g]/grad J curves for {spec['methods']} -> {a.out}")
