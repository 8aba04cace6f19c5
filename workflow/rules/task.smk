# Stage 1: the task and the reference model's exact pass@k.


rule task:
    input:
        code=code("task.py", "policy.py"),
    output:
        task=TASK,
    params:
        P=config["task"]["P"],
        M=config["task"]["M"],
        seed=config["task"]["seed"],
        level_logodds=" ".join(map(str, config["task"]["level_logodds"])),
        spread=config["task"]["logodds_spread"],
    log:
        f"{LOGS}/task.log",
    shell:
        "{RLVR} task --P {params.P} --M {params.M} --seed {params.seed}"
        " --level-logodds {params.level_logodds} --spread {params.spread}"
        " --out {output.task} 2> {log}"


rule reference_passk:
    input:
        task=TASK,
        code=code("metrics.py", "policy.py"),
    output:
        passk=f"{RESULTS}/reference_passk.parquet",
    params:
        k=" ".join(map(str, config["reference"]["k"])),
    log:
        f"{LOGS}/reference_passk.log",
    shell:
        "{RLVR} reference --task {input.task} --k {params.k} --out {output.passk} 2> {log}"
