#!/usr/bin/env bash
# Start a single-node SLURM cluster on this machine (Debian 12, root, no systemd) for the
# integration test: install munge + SLURM from apt, write /etc/slurm/slurm.conf, start munged,
# slurmctld and slurmd as daemons, record their PIDs, and wait until the node is idle.
#
#   bash tests/slurm/start.sh        # state, logs and the pid file under $RLVR_SLURM_STATE
#   bash tests/slurm/stop.sh         # stops exactly the daemons started here
#
# Environment: RLVR_SLURM_STATE (default /tmp/rlvr-slurm), RLVR_SLURM_WAIT (seconds to wait
# for the node, default 60). Without slurmdbd there is no accounting: sacct fails, so run
# Snakemake with --slurm-status-command squeue (MinJobAge below is well above 3 x the init delay).
set -euo pipefail

STATE=${RLVR_SLURM_STATE:-/tmp/rlvr-slurm}
WAIT=${RLVR_SLURM_WAIT:-60}
PIDFILE="$STATE/pids"
CONF=/etc/slurm/slurm.conf # the job step drops SLURM_* variables, so SLURM_CONF won't do
MARKER="# written by rlvr tests/slurm/start.sh"
HERE="$(cd "$(dirname "$0")" && pwd)"

die() {
    echo "slurm start: $*" >&2
    exit 1
}

[ "$(id -u)" -eq 0 ] || die "must run as root (installs packages, writes $CONF)"
mkdir -p "$STATE"

# A cluster left by an earlier run: stop it first, so this one starts clean.
if [ -s "$PIDFILE" ]; then
    bash "$HERE/stop.sh"
fi

# 1. packages (idempotent: apt-get only when something is missing)
need=()
for pkg in munge slurmctld slurmd slurm-client; do
    dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || need+=("$pkg")
done
if [ ${#need[@]} -gt 0 ]; then
    echo "slurm start: apt-get install ${need[*]}"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq >/dev/null || die "apt-get update failed"
    apt-get install -y -qq --no-install-recommends "${need[@]}" >"$STATE/apt.log" 2>&1 ||
        { tail -20 "$STATE/apt.log" >&2; die "apt-get install ${need[*]} failed (log: $STATE/apt.log)"; }
fi

for daemon in slurmctld slurmd; do
    if pgrep -x "$daemon" >/dev/null; then
        die "a $daemon not started by this script is running (pid $(pgrep -x "$daemon" | tr '\n' ' ')); stop it first"
    fi
done

# 2. slurm.conf: one node (this host at 127.0.0.1) with its real CPUs and a little less memory
# than slurmd measures (more would drain the node), no accounting, no cgroups.
mkdir -p "$STATE/ctld" "$STATE/spool" /etc/slurm
host=$(hostname -s)
hw=$(slurmd -C | head -1)
field() { sed -n "s/.*\b$1=\([0-9]*\).*/\1/p" <<<"$hw"; }
cpus=$(field CPUs)
mem=$(field RealMemory)
[ -n "$cpus" ] && [ -n "$mem" ] || die "cannot parse 'slurmd -C': $hw"
real_mem=$((mem * 9 / 10))
def_mem=$((real_mem / cpus / 4)) # a job that asks for no memory gets a quarter of a CPU's share
[ "$def_mem" -ge 100 ] || def_mem=100

if [ -e "$CONF" ] && ! grep -qF "$MARKER" "$CONF" && [ ! -e "$CONF.before-rlvr" ]; then
    cp -p "$CONF" "$CONF.before-rlvr" # no slurmctld runs, so it is not in use; keep a copy
    echo "slurm start: saved the existing $CONF as $CONF.before-rlvr"
fi
cat >"$CONF" <<EOF
$MARKER; state in $STATE
ClusterName=rlvr
SlurmctldHost=$host(127.0.0.1)
SlurmUser=root
AuthType=auth/munge
MpiDefault=none
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
ReturnToService=2
# finished jobs stay visible to squeue this long (the plugin needs >= 3 x its init delay)
MinJobAge=300
SchedulerParameters=sched_interval=2
StateSaveLocation=$STATE/ctld
SlurmdSpoolDir=$STATE/spool
SlurmctldPidFile=$STATE/slurmctld.pid
SlurmdPidFile=$STATE/slurmd.pid
SlurmctldLogFile=$STATE/slurmctld.log
SlurmdLogFile=$STATE/slurmd.log
SlurmctldDebug=info
SlurmdDebug=info
DefMemPerCPU=$def_mem
NodeName=$host NodeAddr=127.0.0.1 CPUs=$cpus RealMemory=$real_mem State=UNKNOWN
PartitionName=main Nodes=$host Default=YES MaxTime=INFINITE State=UP
EOF

# 3. daemons; each forks and writes its own pid file, which we collect into $PIDFILE
: >"$PIDFILE"
if pgrep -x munged >/dev/null && munge -n 2>/dev/null | unmunge >/dev/null 2>&1; then
    echo "slurm start: using the munged already running (not stopped by stop.sh)"
else
    mkdir -p /run/munge
    chown munge:munge /run/munge
    chmod 0755 /run/munge
    setpriv --reuid=munge --regid=munge --init-groups /usr/sbin/munged ||
        die "munged failed to start (log: /var/log/munge/munged.log)"
    echo "munged $(cat /run/munge/munged.pid)" >>"$PIDFILE"
    munge -n | unmunge >/dev/null || die "munge does not work"
fi

/usr/sbin/slurmctld || die "slurmctld failed to start (log: $STATE/slurmctld.log)"
/usr/sbin/slurmd || die "slurmd failed to start (log: $STATE/slurmd.log)"
for daemon in slurmctld slurmd; do
    for _ in $(seq 50); do
        [ -s "$STATE/$daemon.pid" ] && break
        sleep 0.1
    done
    [ -s "$STATE/$daemon.pid" ] || die "$daemon wrote no pid file (log: $STATE/$daemon.log)"
    echo "$daemon $(cat "$STATE/$daemon.pid")" >>"$PIDFILE"
done

# 4. wait (bounded) for the node to be idle
deadline=$((SECONDS + WAIT))
state=""
while [ "$SECONDS" -lt "$deadline" ]; do
    state=$(sinfo -h -N -n "$host" -o %T 2>/dev/null | head -1 || true)
    [ "$state" = idle ] && break
    sleep 0.5
done
if [ "$state" != idle ]; then
    echo "slurm start: node $host is '${state:-unreachable}' after ${WAIT}s, not idle" >&2
    sinfo -R >&2 || true
    tail -5 "$STATE/slurmctld.log" "$STATE/slurmd.log" >&2 || true
    bash "$HERE/stop.sh"
    exit 1
fi
echo "slurm start: node $host idle ($cpus CPUs, ${real_mem} MB); pids in $PIDFILE"
