# Stage 3b: the network (rlvr/net/): a base a seed, taught the toy's reference policy, then a
# training job per network row's block of seeds, packed, each seed from its own base; each job
# one torch thread.


if NET_BASES:

    for _name, _base in NET_BASES.items():

        rule:
            name:
                _name
            input:
                task=TASK,
            output:
                params=f"{RESULTS}/{netspecs.base_files(_base.seed)[0]}.parquet",
                prompts=f"{RESULTS}/{netspecs.base_files(_base.seed)[1]}.parquet",
            log:
                f"{LOGS}/{netspecs.base_files(_base.seed)[0]}.log",
            priority: 1  # the longest single jobs: started first, while the toy's jobs fill the other core
            conda:
                ENV
            resources:
                runtime=60,
                mem_mb=1000,
            params:
                spec=PLAN[netspecs.base_files(_base.seed)[0]].spec,
                code=PLAN[netspecs.base_files(_base.seed)[0]].code,
            shell:
                "python -m rlvr net_base --spec {params.spec:q} --code {params.code} --task {input.task}"
                " --out {output.params} --prompts {output.prompts} 2> {log}"

    for _name, _job in NET_JOBS.items():

        rule:
            name:
                _name
            input:
                task=TASK,
                bases=[
                    f"{RESULTS}/{netspecs.base_files(seed)[0]}.parquet"
                    for seed in _job.seeds
                ],
            output:
                **{
                    kind: f"{RESULTS}/{_job.path}.{kind}.parquet"
                    for kind in netspecs.NET_FILES
                },
            log:
                f"{LOGS}/{_job.path}.log",
            conda:
                ENV
            resources:
                runtime=60,
                mem_mb=1000,
            params:
                spec=PLAN[f"{_job.path}.{netspecs.NET_FILES[0]}"].spec,
                code=PLAN[f"{_job.path}.{netspecs.NET_FILES[0]}"].code,
                results=results_of_network_job,
            shell:
                "python -m rlvr net_train --spec {params.spec:q} --code {params.code}"
                " --task {input.task} --bases {input.bases:q} --results {params.results} 2> {log}"

    NET_RESULTS = (
        "net_base",
        *io.NET_PARTS,
    )  # the bases' P(correct), then the rows' tables

    rule aggregate_network:
        input:
            **{result: inputs_of(binding.NAMES[result]) for result in NET_RESULTS},
        output:
            **{result: f"{RESULTS}/{io.RESULT_FILES[result]}" for result in NET_RESULTS},
        log:
            f"{LOGS}/aggregate_network.log",
        group:
            "aggregate"
        conda:
            ENV
        params:
            code=PLAN[binding.NAMES["net_curves"]].code,
            lists=lambda wildcards, input: "\n\n".join(
                "\n".join(input[result]) for result in NET_RESULTS
            ),
            outs=lambda wildcards, output: " ".join(
                f"--out {shlex.quote(output[result])}" for result in NET_RESULTS
            ),
        shell:
            "python -m rlvr aggregate --code {params.code} {params.outs} --in - <<< {params.lists:q} 2> {log}"
