# rlvr: the GRPO lecture's four demos as a cached pipeline. `snakemake -c all` runs it all.
# Stages: task -> reference pass@k -> gradient statistics -> training runs -> aggregate -> render.
from snakemake.utils import min_version

min_version("9.0")


configfile: "config/config.yaml"


# the HTML report's landing page (`snakemake --report`; profiles/default/ makes it the first page)
report: "workflow/report/workflow.rst"


include: "workflow/rules/common.smk"
include: "workflow/rules/task.smk"
include: "workflow/rules/gradients.smk"
include: "workflow/rules/training.smk"
include: "workflow/rules/network.smk"
include: "workflow/rules/aggregate.smk"
include: "workflow/rules/render.smk"


wildcard_constraints:
    method=r"[A-Za-z0-9_]+",


onstart:
    take_run_lock()  # one executing run per results directory (workflow/rules/common.smk)
    # results/configs/: which config made results/ (`rlvr clean` keeps its files)
    say_what_runs(record_the_config())


onsuccess:
    note_what_was_written()  # what it wrote, said and noted: the next parse need not read it again


onerror:
    note_what_was_written(failed=True)


rule all:
    input:
        final_outputs(),
