# Stage 4: concatenate the per-job Parquet files into the tables users open.


rule aggregate_gradient_stats:
    input:
        gradstat_files(),
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
        order=gradstat_order(),
        code=code("aggregate"),
    shell:
        "printf '%s\\n' {input:q} | python -m rlvr aggregate --order {params.order:q}"
        " --code {params.code} --out {output} --in - 2> {log}"


rule aggregate_training:
    input:
        runs=run_files(".run.parquet"),
        curves=run_files(".curve.parquet"),
        klgrad=run_files(".klgrad.parquet"),
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
        code=code("aggregate"),
    shell:
        "printf '%s\\n' {input.runs:q} '' {input.curves:q} '' {input.klgrad:q}"
        " | python -m rlvr aggregate --code {params.code} --out {output.runs}"
        " --out {output.curves} --out {output.klgrad} --in - 2> {log}"


# the trained policies' pass@k, with the step-0 policy's as method "reference" in every experiment
rule aggregate_passk:
    input:
        passk=run_files(".passk.parquet"),
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
        code=code("aggregate"),
    shell:
        "printf '%s\\n' {input.passk:q} | python -m rlvr aggregate --code {params.code}"
        " --reference {input.reference} --out {output.passk} --in - 2> {log}"
