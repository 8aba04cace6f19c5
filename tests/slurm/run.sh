#!/usr/bin/env bash
# SLURM integration test: start a single-node cluster on this machine, run config/test.yaml
# through `--executor slurm` (workflow/profiles/slurm) and locally, and check that every Parquet file
# of the two runs holds the same values. The daemons are stopped by PID on every exit.
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
export RLVR_SLURM_STATE=${RLVR_SLURM_STATE:-$(mktemp -d /tmp/rlvr-slurm.XXXXXX)}
work=$(mktemp -d /tmp/rlvr-slurm-work.XXXXXX)
finish() {
    status=$?
    bash "$repo/tests/slurm/stop.sh"
    rm -rf "$work"
    if [ "$status" -eq 0 ]; then echo "slurm integration: 1 passed, 0 failed"; else echo "slurm integration: 0 passed, 1 failed"; fi
    exit "$status"
}
trap finish EXIT

python -c "import snakemake_executor_plugin_slurm" 2>/dev/null || pip install -q -e "$repo[slurm]"
bash "$repo/tests/slurm/start.sh"

smk=(python -m snakemake -s "$repo/Snakefile" --configfile "$repo/config/test.yaml")
echo "== local run"
"${smk[@]}" --directory "$work/local" -c2 -q
echo "== SLURM run (workflow/profiles/slurm)"
t0=$(date +%s)
# a hung snakemake has ignored SIGTERM before: kill it 10 s after the time limit
# --cores 2: a group job may not ask for more CPUs than the test node has
timeout -k 10 900 "${smk[@]}" --directory "$work/slurm" --workflow-profile "$repo/workflow/profiles/slurm" \
    --slurm-no-account --slurm-init-seconds-before-status-checks 2 --cores 2 >"$work/slurm.log" 2>&1 ||
    { tail -40 "$work/slurm.log"; echo "the SLURM run failed" >&2; exit 1; }
grep -E "submitted with SLURM|steps \(" "$work/slurm.log" | sed 's/ (log: .*//' 
echo "SLURM run took $(( $(date +%s) - t0 )) s for $(grep -c "submitted with SLURM" "$work/slurm.log") SLURM jobs"

python - "$work/local/results" "$work/slurm/results" <<'PY'
import sys
from pathlib import Path

import pyarrow.parquet as pq

local, slurm = map(Path, sys.argv[1:])
files = sorted(p.relative_to(local) for p in local.rglob("*.parquet"))
assert files == sorted(p.relative_to(slurm) for p in slurm.rglob("*.parquet")), "different sets of files"
for f in files:
    assert pq.read_table(local / f).equals(pq.read_table(slurm / f)), f"{f} differs"
print(f"{len(files)} Parquet files identical between the local and the SLURM run")
PY
