#!/usr/bin/env bash
# SLURM integration test: start a single-node cluster on this machine, run config/test.yaml
# through `--executor slurm` (workflow/profiles/slurm) and locally, and check that every Parquet file
# of the two runs holds the same values. The daemons are stopped by PID on every exit.
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
own_state=
[ -n "${RLVR_SLURM_STATE:-}" ] || own_state=$(mktemp -d /tmp/rlvr-slurm.XXXXXX)
export RLVR_SLURM_STATE=${RLVR_SLURM_STATE:-$own_state}
work=$(mktemp -d /tmp/rlvr-slurm-work.XXXXXX)
finish() {
    status=$?
    bash "$repo/tests/slurm/stop.sh"
    rm -rf "$work"
    # the cluster's state and logs: kept after a failure
    if [ "$status" -eq 0 ] && [ -n "$own_state" ]; then rm -rf "$own_state"; fi
    if [ "$status" -eq 0 ]; then echo "slurm integration: 1 passed, 0 failed"; else echo "slurm integration: 0 passed, 1 failed"; fi
    exit "$status"
}
trap finish EXIT

py=${PYTHON:-python}
if ! "$py" -c "import snakemake_executor_plugin_slurm" 2>/dev/null; then
    echo "== pip install -e \".[slurm]\" (the SLURM executor plugin)"
    (cd "$repo" && "$py" -m pip install -q -e ".[slurm]" >"$work/pip.log" 2>&1) ||
        { tail -20 "$work/pip.log"; echo "pip install -e .[slurm] failed" >&2; exit 1; }
fi
bash "$repo/tests/slurm/start.sh"

smk=("$py" -m snakemake -s "$repo/Snakefile" --configfile "$repo/config/test.yaml")
echo "== local run"
timeout -k 10 300 "${smk[@]}" --directory "$work/local" -c2 -q >"$work/local.log" 2>&1 ||
    { tail -40 "$work/local.log"; echo "the local run failed" >&2; exit 1; }
echo "== SLURM run (workflow/profiles/slurm)"
t0=$(date +%s)
# a hung snakemake has ignored SIGTERM before: kill it 10 s after the time limit
# --cores 2: a group job may not ask for more CPUs than the test node has
timeout -k 10 600 "${smk[@]}" --directory "$work/slurm" --workflow-profile "$repo/workflow/profiles/slurm" \
    --slurm-no-account --slurm-init-seconds-before-status-checks 2 --cores 2 >"$work/slurm.log" 2>&1 ||
    { tail -40 "$work/slurm.log"; echo "the SLURM run failed" >&2; exit 1; }
grep -E "submitted with SLURM|steps \(" "$work/slurm.log" | sed 's/ (log: .*//' 
submitted=$(grep -c "submitted with SLURM" "$work/slurm.log" || true)
# a group job is submitted under a UUID, a single job under its number
group_jobs=$(grep -cE "^Job [0-9a-f]{8}-[0-9a-f-]{27} has been submitted with SLURM" "$work/slurm.log" || true)
steps=$(sed -n 's/^[0-9]* of \([0-9]*\) steps.*/\1/p' "$work/slurm.log" | tail -1)
echo "SLURM run took $(( $(date +%s) - t0 )) s: ${steps:-?} rule jobs in $submitted SLURM jobs, $group_jobs of them group jobs"
[ "$group_jobs" -ge 1 ] && [ "$submitted" -lt "${steps:-0}" ] ||
    { echo "the grouped rules were not submitted as group jobs" >&2; exit 1; }

"$py" - "$work/local/results" "$work/slurm/results" <<'PY'
import sys
from pathlib import Path

local, slurm = map(Path, sys.argv[1:])
files = sorted(p.relative_to(local) for p in local.rglob("*.parquet"))
assert files == sorted(p.relative_to(slurm) for p in slurm.rglob("*.parquet")), "different sets of files"
for f in files:
    assert (local / f).read_bytes() == (slurm / f).read_bytes(), f"{f} differs"  # bit for bit, NaN too
print(f"{len(files)} Parquet files identical between the local and the SLURM run")
PY
