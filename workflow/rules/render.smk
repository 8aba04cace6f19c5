# Stage 5: the lecture's tables (text, Markdown) and the report figures.


for demo in ASKED:
    inputs = render_inputs(demo)

    rule:
        name:
            f"render_{demo.name}"
        input:
            **inputs,
        output:
            # update(): Snakemake keeps the earlier tables and figures while the job runs and
            # puts them back if it fails; the checksum file, which vouches for them, is not
            # kept, so a failed job's demo is rendered again by the next run
            [
                update(
                    report(path, caption=caption, category=demo.category)
                    if caption
                    else path
                )
                for path, caption in render_outputs(demo)
            ],
            checksums=checksums(f"render_{demo.name}"),
        log:
            f"{LOGS}/render_{demo.name}.log",
        priority: 1  # as soon as its rows are trained, before the aggregations: an edited row's figures first
        group:
            "render"
        conda:
            ENV
        params:
            demo=demo.name,
            lang=config["lang"],
            frames=frame_arguments(inputs),
            tables=directory_of("tables"),
            figures=directory_of("figures"),
            code=code("render"),
            look=render_look(demo),
        shell:
            "python -m rlvr render --demo {params.demo} --lang {params.lang} --from-jobs {params.frames}"
            " --tables {params.tables} --figures {params.figures} --checksums {output.checksums}"
            " --code {params.code} 2> {log}"


rule assemble:
    input:
        texts=[table_path(demo, ".txt") for demo in ASKED],
        claims=[table_path(demo, CLAIMS) for demo in ASKED],
        manifests=[checksums(f"render_{demo.name}") for demo in ASKED],
    output:
        all=update(f"{RESULTS}/tables/all.txt"),  # kept through a failed job, as above
        claims=update(f"{RESULTS}/claims.md"),
        checksums=checksums("assemble"),
    log:
        f"{LOGS}/assemble.log",
    group:
        "render"
    conda:
        ENV
    params:
        drop=f"--drop {' '.join(DROPPED)}" if DROPPED else "",
        code=code("assemble"),
    shell:
        "python -m rlvr assemble --texts {input.texts} --claim-files {input.claims} --manifests {input.manifests}"
        " --all {output.all} --claims {output.claims} --checksums {output.checksums}"
        " --code {params.code} {params.drop} 2> {log}"
