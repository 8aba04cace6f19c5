# Stage 2: Monte Carlo moments of each estimator's gradient, one job per (offset, method, level).


rule gradient_stat:
    input:
        task=TASK,
        code=code("estimators.py", "policy.py", "metrics.py", "exact.py"),
    output:
        stats=f"{RESULTS}/gradient_stats/off{{offset}}/{{method}}/{{level}}.parquet",
    log:
        f"{LOGS}/gradient_stats/off{{offset}}/{{method}}/{{level}}.log",
    priority: 1  # demos 1-2 first: their figures are drawn while training runs
    group:
        "gradient_stats"
    conda:
        ENV
    resources:
        runtime=10,
        mem_mb=500,
    params:
        G=config["gradient_stats"]["G"],
        n_reps=config["gradient_stats"]["n_reps"],
        seed=config["gradient_stats"]["seed"],
    shell:
        "python -m rlvr gradstats --task {input.task} --offset {wildcards.offset}"
        " --method {wildcards.method} --level {wildcards.level} --G {params.G}"
        " --reps {params.n_reps} --seed {params.seed} --out {output.stats} 2> {log}"


rule exact_curve:
    input:
        code=code("estimators.py", "exact.py"),
    output:
        exact=f"{RESULTS}/{C.EXACT_FILE}",
    log:
        f"{LOGS}/exact_curve.log",
    priority: 1  # demos 1-2 first: their figures are drawn while training runs
    conda:
        ENV
    params:
        methods=" ".join(config["gradient_stats"]["exact_curve"]["methods"]),
        G=config["gradient_stats"]["G"],
        M=config["task"]["M"],
        n_points=config["gradient_stats"]["exact_curve"]["n_points"],
    shell:
        "python -m rlvr exact --methods {params.methods} --G {params.G} --M {params.M}"
        " --n-points {params.n_points} --out {output.exact} 2> {log}"
