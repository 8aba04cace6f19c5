# Stage 4: concatenate the per-job Parquet files into the tables users open.


if config["gradient_stats"]["enabled"]:  # demo 2 on

    rule aggregate_gradient_stats:
        input:
            inputs_of("gradient_stats"),
        output:
            f"{RESULTS}/gradient_stats.parquet",
        log:
            f"{LOGS}/aggregate_gradient_stats.log",
        priority: 1  # demos 1-2 first: their figures are drawn while training runs
        group:
            "aggregate"
        conda:
            ENV
        params:
            order=PLAN["gradient_stats"].spec,
            code=PLAN["gradient_stats"].code,
        shell:
            "printf '%s\\n' {input:q} | python -m rlvr aggregate --order {params.order:q}"
            " --code {params.code} --out {output} --in - 2> {log}"


rule aggregate_training:
    input:
        runs=inputs_of("runs"),
        curves=inputs_of("curves"),
        klgrad=inputs_of("kl_gradients"),
    output:
        runs=f"{RESULTS}/runs.parquet",
        curves=f"{RESULTS}/curves.parquet",
        klgrad=f"{RESULTS}/kl_gradients.parquet",
    log:
        f"{LOGS}/aggregate_training.log",
    group:
        "aggregate"
    conda:
        ENV
    params:
        code=PLAN["runs"].code,
    shell:
        "printf '%s\\n' {input.runs:q} '' {input.curves:q} '' {input.klgrad:q}"
        " | python -m rlvr aggregate --code {params.code} --out {output.runs}"
        " --out {output.curves} --out {output.klgrad} --in - 2> {log}"


# the trained policies' pass@k, with the step-0 policy's as method "reference" in every experiment
rule aggregate_passk:
    input:
        passk=inputs_of("passk_trained")[:-1],  # the last: the reference's
        reference=f"{RESULTS}/reference_passk.parquet",
    output:
        passk=f"{RESULTS}/passk_trained.parquet",
    log:
        f"{LOGS}/aggregate_passk.log",
    group:
        "aggregate"
    conda:
        ENV
    params:
        code=PLAN["passk_trained"].code,
    shell:
        "printf '%s\\n' {input.passk:q} | python -m rlvr aggregate --code {params.code}"
        " --reference {input.reference} --out {output.passk} --in - 2> {log}"
