# Stage 3: one job per training row (experiment, method, lr, offset, G, prompts per step,
# steps, dynamic-sampling rounds) and block of its seeds, trained together (rlvr/training.py).


rule train:
    input:
        task=TASK,
    output:
        run=f"{RESULTS}/{{row}}.run.parquet",
        curve=f"{RESULTS}/{{row}}.curve.parquet",
        passk=f"{RESULTS}/{{row}}.passk.parquet",
        klgrad=f"{RESULTS}/{{row}}.klgrad.parquet",
        logits=f"{RESULTS}/{{row}}.logits.parquet",
    log:
        f"{LOGS}/{{row}}.log",
    group:
        "train"
    conda:
        ENV
    resources:
        runtime=10,
        mem_mb=row_memory,
    params:
        spec=row_spec,
        code=row_code,
    shell:
        "python -m rlvr train --spec - --code {params.code} --task {input.task}"
        " --run {output.run} --curve {output.curve} --passk {output.passk}"
        " --klgrad {output.klgrad} --logits {output.logits} <<< {params.spec:q} 2> {log}"
