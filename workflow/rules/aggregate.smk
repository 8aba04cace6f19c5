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
    shell:
        "python -m rlvr aggregate --out {output} {input} 2> {log}"


rule aggregate_runs:
    input:
        run_files(".run.parquet"),
    output:
        f"{RESULTS}/runs.parquet",
    log:
        f"{LOGS}/aggregate_runs.log",
    group:
        "aggregate"
    conda:
        ENV
    shell:
        "python -m rlvr aggregate --out {output} {input} 2> {log}"


rule aggregate_curves:
    input:
        run_files(".curve.parquet"),
    output:
        f"{RESULTS}/curves.parquet",
    log:
        f"{LOGS}/aggregate_curves.log",
    group:
        "aggregate"
    conda:
        ENV
    shell:
        "python -m rlvr aggregate --out {output} {input} 2> {log}"


rule aggregate_passk:
    input:
        run_files(".passk.parquet"),
    output:
        f"{RESULTS}/passk_trained.parquet",
    log:
        f"{LOGS}/aggregate_passk.log",
    group:
        "aggregate"
    conda:
        ENV
    shell:
        "python -m rlvr aggregate --out {output} {input} 2> {log}"
