# Stage 5: the lecture's tables (text, Markdown) and the report figures.


rule tables:
    input:
        task=TASK,
        reference=f"{RESULTS}/reference_passk.parquet",
        gradstats=f"{RESULTS}/gradient_stats.parquet",
        runs=f"{RESULTS}/runs.parquet",
        curves=f"{RESULTS}/curves.parquet",
        passk=f"{RESULTS}/passk_trained.parquet",
        klgrad=f"{RESULTS}/kl_gradients.parquet",
        exact=f"{RESULTS}/{C.EXACT_FILE}",
    output:
        TABLES,
        claims=f"{RESULTS}/claims.md",
        checksums=checksums("tables"),
    log:
        f"{LOGS}/tables.log",
    group:
        "render"
    conda:
        ENV
    params:
        lang=config["lang"],
        names=" ".join(C.demos(config)),
        outdir=lambda w, output: os.path.dirname(output[0]),
        code=code("tables"),
        look=LOOK,
    shell:
        "python -m rlvr tables --names {params.names} --task {input.task} --reference {input.reference}"
        " --gradstats {input.gradstats} --runs {input.runs} --curves {input.curves}"
        " --passk {input.passk} --klgrad {input.klgrad} --exact {input.exact} --lang {params.lang}"
        " --outdir {params.outdir}"
        " --claims {output.claims} --checksums {output.checksums} --code {params.code} 2> {log}"


rule figures_reference_gradients:
    input:
        reference=f"{RESULTS}/reference_passk.parquet",
        gradstats=f"{RESULTS}/gradient_stats.parquet",
        exact=f"{RESULTS}/{C.EXACT_FILE}",
    output:
        figure_outputs(EARLY_FIGURES),
        checksums=checksums("figures_reference_gradients"),
    log:
        f"{LOGS}/figures_reference_gradients.log",
    priority: 1  # demos 1-2 first: their figures are drawn while training runs
    group:
        "render"
    conda:
        ENV
    params:
        names=" ".join(EARLY_FIGURES),
        outdir=lambda w, output: os.path.dirname(output[0]),
        code=code("figures"),
        look=LOOK,
    shell:
        "python -m rlvr figures --names {params.names} --reference {input.reference}"
        " --gradstats {input.gradstats} --exact {input.exact}"
        " --outdir {params.outdir} --checksums {output.checksums} --code {params.code} 2> {log}"


rule figures_training:
    input:
        reference=f"{RESULTS}/reference_passk.parquet",
        runs=f"{RESULTS}/runs.parquet",
        curves=f"{RESULTS}/curves.parquet",
        passk=f"{RESULTS}/passk_trained.parquet",
    output:
        figure_outputs(TRAINING_FIGURES),
        checksums=checksums("figures_training"),
    log:
        f"{LOGS}/figures_training.log",
    group:
        "render"
    conda:
        ENV
    params:
        names=" ".join(TRAINING_FIGURES),
        drop=f"--drop {' '.join(DROPPED_FIGURES)}" if DROPPED_FIGURES else "",
        outdir=lambda w, output: os.path.dirname(output[0]),
        code=code("figures"),
        look=LOOK,
    shell:
        "python -m rlvr figures --names {params.names} {params.drop} --reference {input.reference}"
        " --runs {input.runs} --curves {input.curves} --passk {input.passk}"
        " --outdir {params.outdir} --checksums {output.checksums} --code {params.code} 2> {log}"
