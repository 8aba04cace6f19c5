# Stage 3: the training jobs (experiment, method, lr, offset, G, prompts per step, steps,
# dynamic-sampling rounds, and a block of the row's seeds, trained together: rlvr/training.py),
# in packs, each trained by one process (rlvr/packs.py): a rule per pack, train_<name>.


for _name, _pack in TRAIN_PACKS.items():

    rule:
        name:
            _name
        input:
            task=TASK,
        output:
            **pack_outputs(_pack),
        log:
            f"{LOGS}/train/{_pack.name}.log",
        group:
            "train"
        conda:
            ENV
        resources:
            runtime=10,
            mem_mb=pack_memory(_pack),
        params:
            specs="\n".join(_pack.specs),
            code=" ".join(_pack.codes),
            results=results_of_pack,
        shell:
            "python -m rlvr train --spec - --code {params.code} --task {input.task}"
            " --results {params.results} --manifest {output.manifest} <<< {params.specs:q} 2> {log}"
