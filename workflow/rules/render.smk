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
        table_outputs(),
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
        drop=f"--drop {' '.join(DROPPED_FIGURES)}" if DROPPED_FIGURES else "",
        code=code("tables"),
        look=LOOK,
    shell:
        "python -m rlvr tables --names {params.names} --task {input.task} --reference {input.reference}"
        " --gradstats {input.gradstats} --runs {input.runs} --curves {input.curves}"
        " --passk {input.passk} --klgrad {input.klgrad} --exact {input.exact} --lang {params.lang}"
        " --outdir {params.outdir}"
        " --claims {output.claims} --checksums {output.checksums} --code {params.code}"
        " {params.drop} 2> {log}"


# one figures job per demo (workflow/rules/common.smk's figure_inputs): `rule:` in a loop, as a
# job's outputs (the figures' own names) cannot be given by a wildcard. Every directive takes
# its value now: a name the shell command looked up would be read when the job runs, after
# the loop has ended
for demo in FIGURE_DEMOS:
    # read now, in the directives below: each rule keeps its own
    inputs = figure_inputs(demo)

    rule:
        name:
            f"figures_{demo.name}"
        input:
            **inputs,
        output:
            figure_outputs(demo.figures),
            checksums=checksums(f"figures_{demo.name}"),
        log:
            f"{LOGS}/figures_{demo.name}.log",
        priority: 0 if set(inputs) & set(TRAINED) else 1  # demos 1-2: beside training
        group:
            "render"
        conda:
            ENV
        params:
            names=" ".join(demo.figures),
            frames=frame_arguments(inputs),
            outdir=lambda w, output: os.path.dirname(output[0]),
            code=code("figures"),
            look=figure_look(demo, inputs),
        shell:
            "python -m rlvr figures --names {params.names} --from-jobs {params.frames}"
            " --outdir {params.outdir} --checksums {output.checksums} --code {params.code} 2> {log}"
