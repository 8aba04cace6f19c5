# Stage 1: the task and the reference model's exact pass@k.


rule task:
    input:
        code=code("task.py", "policy.py"),
    output:
        task=TASK,
    log:
        f"{LOGS}/task.log",
    conda:
        ENV
    params:
        P=config["task"]["P"],
        M=config["task"]["M"],
        seed=config["task"]["seed"],
        level_logodds=" ".join(map(str, config["task"]["level_logodds"])),
        spread=config["task"]["logodds_spread"],
    shell:
        "python -m rlvr task --P {params.P} --M {params.M} --seed {params.seed}"
        " --level-logodds {params.level_logodds} --spread {params.spread}"
        " --out {output.task} 2> {log}"


rule reference_passk:
    input:
        task=TASK,
        code=code("metrics.py", "policy.py"),
    output:
        passk=f"{RESULTS}/reference_passk.parquet",
    log:
        f"{LOGS}/reference_passk.log",
    priority: 1  # demos 1-2 first: their figures are drawn while training runs
    conda:
        ENV
    params:
        k=" ".join(map(str, config["reference"]["k"])),
        n_samples=config["reference"]["n_samples"],
        seed=config["reference"]["seed"],
    shell:
        "python -m rlvr reference --task {input.task} --k {params.k}"
        " --n-samples {params.n_samples} --seed {params.seed} --out {output.passk} 2> {log}"
