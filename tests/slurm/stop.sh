#!/usr/bin/env bash
# Stop the daemons tests/slurm/start.sh started, by the PIDs in its pid file (slurmd, then
# slurmctld, then munged); tolerant of processes that are already gone. Ends nothing else.
set -u

STATE=${RLVR_SLURM_STATE:-/tmp/rlvr-slurm}
PIDFILE="$STATE/pids"
[ -f "$PIDFILE" ] || exit 0

alive() { [ "$(cat "/proc/$2/comm" 2>/dev/null)" = "$1" ]; }

# jobs still on the test cluster (a run killed mid-way): cancel them, so that no job step
# outlives slurmd
ctld=$(awk '$1 == "slurmctld" {print $2}' "$PIDFILE")
if [ -n "$ctld" ] && alive slurmctld "$ctld"; then
    jobs=$(timeout 10 squeue -h -o %i 2>/dev/null || true)
    if [ -n "$jobs" ]; then
        # shellcheck disable=SC2086
        timeout 10 scancel $jobs 2>/dev/null || true
        for _ in $(seq 50); do
            [ -z "$(timeout 5 squeue -h -t running,completing -o %i 2>/dev/null)" ] && break
            sleep 0.2
        done
    fi
fi

# the pid file lists "name pid" in start order; stop in reverse
mapfile -t entries < <(tac "$PIDFILE")
for entry in "${entries[@]}"; do
    read -r name pid <<<"$entry"
    [[ "$pid" =~ ^[0-9]+$ ]] || continue
    # only a live process that is still that daemon (a PID may have been reused)
    alive "$name" "$pid" || continue
    kill "$pid" 2>/dev/null || continue
    for _ in $(seq 100); do
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.1
    done
    if kill -0 "$pid" 2>/dev/null; then
        echo "slurm stop: $name ($pid) ignored SIGTERM for 10 s; killing it" >&2
        kill -9 "$pid" 2>/dev/null || true
    fi
done
rm -f "$PIDFILE" "$STATE/slurmctld.pid" "$STATE/slurmd.pid"
echo "slurm stop: stopped (state left in $STATE)"
exit 0
