# rlvr: the GRPO lecture's four demos as a cached pipeline. `snakemake -c8` runs it all.
# Stages: task -> reference pass@k -> gradient statistics -> training runs -> aggregate -> render.
from snakemake.utils import min_version

min_version("9.0")


configfile: "config/config.yaml"


include: "workflow/rules/common.smk"
include: "workflow/rules/task.smk"
include: "workflow/rules/gradients.smk"
include: "workflow/rules/training.smk"
include: "workflow/rules/aggregate.smk"
include: "workflow/rules/render.smk"


wildcard_constraints:
    offset=r"-?[0-9.e+-]+|-?inf|nan",
    lr=r"[0-9.e+-]+",
    method=r"[A-Za-z0-9_]+",
    level="|".join(C.LEVELS),
    experiment="training|group_size|dynamic",
    G=r"\d+",
    pps=r"\d+",
    seed=r"\d+",
    steps=r"\d+",
    rounds=r"\d+",


rule all:
    input:
        final_outputs(),
