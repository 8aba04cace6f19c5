# Stage 3: one training run per (experiment, method, lr, offset, G, prompts per step, steps,
# dynamic-sampling rounds, seed).


rule train:
    input:
        task=TASK,
        code=code("estimators.py", "policy.py", "training.py"),
    output:
        run=f"{RESULTS}/{C.RUN_PATTERN}.run.parquet",
        curve=f"{RESULTS}/{C.RUN_PATTERN}.curve.parquet",
        passk=f"{RESULTS}/{C.RUN_PATTERN}.passk.parquet",
    log:
        f"{LOGS}/{C.RUN_PATTERN}.log",
    group:
        "train"
    conda:
        ENV
    resources:
        runtime=10,
        mem_mb=500,
    params:
        value_lr=config["trainer"]["value_lr"],
        eval_every=config["trainer"]["eval_every"],
        k=" ".join(map(str, config["reference"]["k"])),
    shell:
        "python -m rlvr train --task {input.task} --experiment {wildcards.experiment}"
        " --method {wildcards.method} --lr {wildcards.lr} --offset {wildcards.offset}"
        " --G {wildcards.G} --prompts-per-step {wildcards.pps} --steps {wildcards.steps}"
        " --seed {wildcards.seed} --value-lr {params.value_lr} --eval-every {params.eval_every}"
        " --max-rounds {wildcards.rounds} --k {params.k} --out-run {output.run}"
        " --out-curve {output.curve} --out-passk {output.passk} 2> {log}"
