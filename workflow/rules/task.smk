# Stage 1: the task and the reference model's exact pass@k.


rule task:
    output:
        task=TASK,
    log:
        f"{LOGS}/task.log",
    conda:
        ENV
    params:
        spec=PLAN["task"].spec,
        code=PLAN["task"].code,
    shell:
        "python -m rlvr task --spec {params.spec:q} --code {params.code} --out {output.task} 2> {log}"


rule reference_passk:
    input:
        task=TASK,
    output:
        passk=f"{RESULTS}/reference_passk.parquet",
    log:
        f"{LOGS}/reference_passk.log",
    priority: 1  # demos 1-2 first: their figures are drawn while training runs
    conda:
        ENV
    params:
        spec=PLAN["reference_passk"].spec,
        code=PLAN["reference_passk"].code,
    shell:
        "python -m rlvr reference --spec {params.spec:q} --code {params.code}"
        " --task {input.task} --out {output.passk} 2> {log}"


# demo 13's exact one-step outcomes, where its tabular rows ask for them (rlvr/binding.py plans it)
if "finite_step" in PLAN:
    # (CPU seconds, MiB) the job is estimated to take (rlvr/budget.py)
    FINITE_STEP_COST = budget.finite_step_cost(
        PLAN["finite_step"].spec,
        config["task"]["P"],
        config["task"]["M"],
        len(config["task"]["level_logodds"]),
    )

    rule finite_step:
        input:
            task=TASK,
        output:
            steps=f"{RESULTS}/{io.RESULT_FILES['finite_step']}",
        log:
            f"{LOGS}/finite_step.log",
        conda:
            ENV
        resources:
            mem_mb=max(500, round(FINITE_STEP_COST[1])),
            runtime=max(10, math.ceil(2 * FINITE_STEP_COST[0] / 60)),  # minutes, twice the estimate
        params:
            spec=PLAN["finite_step"].spec,
            code=PLAN["finite_step"].code,
        shell:
            "python -m rlvr finite_step --spec {params.spec:q} --code {params.code}"
            " --task {input.task} --out {output.steps} 2> {log}"
