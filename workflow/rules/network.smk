# Stage 3b: the network (issue 35, rlvr/net/): its base, taught the toy's reference policy, then
# a training job per network row's block of seeds, packed; each job one torch thread.


if NET_BASE is not None:

    rule network_base:
        input:
            task=TASK,
        output:
            params=f"{RESULTS}/{netspecs.BASE}.parquet",
            prompts=f"{RESULTS}/{netspecs.BASE_PROMPTS}.parquet",
        log:
            f"{LOGS}/network/base.log",
        priority: 1  # the longest single job: started first, while the toy's jobs fill the other cores
        conda:
            ENV
        resources:
            runtime=60,
            mem_mb=1000,
        params:
            spec=PLAN[netspecs.BASE].spec,
            code=PLAN[netspecs.BASE].code,
        shell:
            "python -m rlvr net_base --spec {params.spec:q} --code {params.code} --task {input.task}"
            " --out {output.params} --prompts {output.prompts} 2> {log}"

    for _name, _job in NET_JOBS.items():

        rule:
            name:
                _name
            input:
                task=TASK,
                base=f"{RESULTS}/{netspecs.BASE}.parquet",
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
                " --task {input.task} --base {input.base} --results {params.results} 2> {log}"

    rule aggregate_network:
        input:
            **{result: inputs_of(binding.NAMES[result]) for result in io.NET_PARTS},
        output:
            **{
                result: f"{RESULTS}/{io.RESULT_FILES[result]}"
                for result in io.NET_PARTS
            },
        log:
            f"{LOGS}/aggregate_network.log",
        group:
            "aggregate"
        conda:
            ENV
        params:
            code=PLAN[binding.NAMES["net_curves"]].code,
            lists=lambda wildcards, input: "\n\n".join(
                "\n".join(input[result]) for result in io.NET_PARTS
            ),
            outs=lambda wildcards, output: " ".join(
                f"--out {shlex.quote(output[result])}" for result in io.NET_PARTS
            ),
        shell:
            "python -m rlvr aggregate --code {params.code} {params.outs} --in - <<< {params.lists:q} 2> {log}"
