# Stage 2: Monte Carlo and exact moments of each estimator's gradient, one job per method
# (all its reward offsets and probe levels), and the exact bias curves.


rule gradient_stats:
    input:
        task=TASK,
    output:
        stats=f"{RESULTS}/gradient_stats/{{method}}.parquet",
    log:
        f"{LOGS}/gradient_stats/{{method}}.log",
    priority: 1  # demos 1-2 first: their figures are drawn while training runs
    group:
        "gradient_stats"
    conda:
        ENV
    resources:
        runtime=10,
        mem_mb=500,
    params:
        spec=lambda w: PLAN[f"gradient_stats/{w.method}"].spec,
        code=lambda w: PLAN[f"gradient_stats/{w.method}"].code,
    shell:
        "python -m rlvr gradstats --spec - --code {params.code}"
        " --task {input.task} --out {output.stats} <<< {params.spec:q} 2> {log}"


# demo 2 off (gradient_stats.enabled: false): no exact curve, nor statistics (rlvr/binding.py plans none)
if config["gradient_stats"]["enabled"]:

    rule exact_curve:
        output:
            exact=f"{RESULTS}/{C.EXACT_FILE}",
        log:
            f"{LOGS}/exact_curve.log",
        priority: 1  # demos 1-2 first: their figures are drawn while training runs
        conda:
            ENV
        params:
            spec=PLAN["exact_bias"].spec,
            code=PLAN["exact_bias"].code,
        shell:
            "python -m rlvr exact --spec {params.spec:q} --code {params.code} --out {output.exact} 2> {log}"
