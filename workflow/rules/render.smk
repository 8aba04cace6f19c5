# Stage 5: the lecture's tables (text, Markdown), the report figures, tables/all.txt and claims.md:
# one job, one interpreter, drawing only the demos whose rows, look or code changed.


rule render:
    input:
        **render_inputs(),
    output:
        # update(): Snakemake keeps the earlier files while the job runs (it keeps the demos
        # whose inputs did not change) and puts them back, with the checksum file that
        # vouches for them, if it fails
        [
            update(
                report(
                    path,
                    caption=caption,
                    category=demo.category,
                    # the report groups a demo's files under these (else under "Other")
                    subcategory="table" if path.endswith(".html") else "figures",
                )
                if caption
                else path
            )
            for demo in ASKED
            for path, caption in render_outputs(demo)
        ],
        all=update(f"{RESULTS}/tables/all.txt"),
        claims=update(f"{RESULTS}/claims.md"),
        checksums=update(checksums("render")),
    log:
        f"{LOGS}/render.log",
    conda:
        ENV
    # demos drawn at once, each by a process forked from the job's
    threads: RENDER_THREADS
    resources:
        mem_mb=render_memory(),
    params:
        demos=" ".join(demo.name for demo in ASKED),
        lang=config["lang"],
        frames=lambda wildcards, input: " ".join(
            f"--{frame} {shlex.quote(path)}" for frame, path in input.items()
        ),
        tables=lambda wildcards, output: os.path.dirname(output.all),
        figures=lambda wildcards, output: os.path.join(
            os.path.dirname(os.path.dirname(output.all)), "figures"
        ),
        drop=f"--drop {' '.join(DROPPED)}",
        code=code("render"),
        look=render_look(),
    shell:
        "python -m rlvr render --demo {params.demos} --lang {params.lang} {params.frames}"
        " --tables {params.tables} --figures {params.figures} --all {output.all} --claims {output.claims}"
        " --checksums {output.checksums} --threads {threads} --code {params.code} {params.drop} 2> {log}"
