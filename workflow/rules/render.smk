# Stage 5: the lecture's tables (text, Markdown) and the report figures.


rule tables:
    input:
        reference=f"{RESULTS}/reference_passk.parquet",
        gradstats=f"{RESULTS}/gradient_stats.parquet",
        runs=f"{RESULTS}/runs.parquet",
        code=code("render.py", "text.py"),
    output:
        TABLES,
    log:
        f"{LOGS}/tables.log",
    conda:
        ENV
    params:
        rlvr=RLVR,
        lang=config["lang"],
        outdir=lambda w, output: os.path.dirname(output[0]),
    shell:
        "{params.rlvr} tables --reference {input.reference} --gradstats {input.gradstats}"
        " --runs {input.runs} --lang {params.lang} --outdir {params.outdir} 2> {log}"


rule figures:
    input:
        reference=f"{RESULTS}/reference_passk.parquet",
        gradstats=f"{RESULTS}/gradient_stats.parquet",
        runs=f"{RESULTS}/runs.parquet",
        curves=f"{RESULTS}/curves.parquet",
        code=code("render.py", "figures.py"),
    output:
        passk=report(
            f"{RESULTS}/figures/passk_by_level.png",
            caption="../report/passk_by_level.rst",
            category="Demo 1: reference",
        ),
        gradients=report(
            f"{RESULTS}/figures/gradient_estimators.png",
            caption="../report/gradient_estimators.rst",
            category="Demo 2: gradients",
        ),
        curves=report(
            f"{RESULTS}/figures/learning_curves.png",
            caption="../report/learning_curves.rst",
            category="Demo 3: training",
        ),
        group_size=report(
            f"{RESULTS}/figures/group_size.png",
            caption="../report/group_size.rst",
            category="Demo 4: group size",
        ),
    log:
        f"{LOGS}/figures.log",
    conda:
        ENV
    params:
        rlvr=RLVR,
        outdir=lambda w, output: os.path.dirname(output[0]),
    shell:
        "{params.rlvr} figures --reference {input.reference} --gradstats {input.gradstats}"
        " --runs {input.runs} --curves {input.curves} --outdir {params.outdir} 2> {log}"
