#!/usr/bin/env bash
# A single-node Slurm cluster for tests/slurm.rs, started without systemd:
#   cluster.sh up STATE_DIR    starts munged, slurmctld and slurmd (needs root and
#                              Debian's slurm-wlm, slurmctld, slurmd, slurm-client, munge)
#   cluster.sh down STATE_DIR  stops exactly the daemons `up` started, by their pid files
set -euo pipefail
action=$1
state=$2
mkdir -p "$state"

case "$action" in
up)
    for tool in munged slurmctld slurmd sbatch sinfo; do
        command -v "$tool" >/dev/null || [ -x "/usr/sbin/$tool" ] || {
            echo "missing $tool: apt-get install slurm-wlm slurmctld slurmd slurm-client munge" >&2
            exit 1
        }
    done
    [ "$(id -u)" = 0 ] || { echo "starting Slurm's daemons needs root" >&2; exit 1; }
    host=$(hostname -s)
    cpus=$(nproc)
    mem=$(( $(awk '/MemTotal/{print int($2/1024)}' /proc/meminfo) - 1024 ))
    mkdir -p /run/munge && chown munge:munge /run/munge
    [ -f /etc/munge/munge.key ] || { /usr/sbin/mungekey --create 2>/dev/null || dd if=/dev/urandom of=/etc/munge/munge.key bs=1024 count=1 2>/dev/null; chown munge:munge /etc/munge/munge.key; chmod 400 /etc/munge/munge.key; }
    # A munged already running serves us too; only one we start is ours to stop.
    if ! { [ -f /run/munge/munged.pid ] && kill -0 "$(cat /run/munge/munged.pid)" 2>/dev/null; }; then
        su -s /bin/sh munge -c /usr/sbin/munged
        cp /run/munge/munged.pid "$state/munged.pid"
    fi
    # Stale state gives "CLUSTER NAME MISMATCH".
    rm -rf "$state/ctld" "$state/d"
    mkdir -p "$state/ctld" "$state/d" "$state/log"
    chown slurm:slurm "$state/ctld" "$state/log"
    cat > "$state/slurm.conf" <<CONF
ClusterName=miltest
SlurmctldHost=$host
SlurmUser=slurm
AuthType=auth/munge
StateSaveLocation=$state/ctld
SlurmdSpoolDir=$state/d
SlurmctldPidFile=$state/slurmctld.pid
SlurmdPidFile=$state/slurmd.pid
SlurmctldLogFile=$state/log/slurmctld.log
SlurmdLogFile=$state/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
ReturnToService=2
MpiDefault=none
NodeName=$host CPUs=$cpus RealMemory=$mem State=UNKNOWN
PartitionName=debug Nodes=$host Default=YES MaxTime=INFINITE State=UP
CONF
    export SLURM_CONF="$state/slurm.conf"
    /usr/sbin/slurmctld -i -f "$SLURM_CONF"
    sleep 2
    /usr/sbin/slurmd -f "$SLURM_CONF"
    for _ in $(seq 1 30); do
        sinfo -h -o %t 2>/dev/null | grep -q idle && exit 0
        sleep 1
    done
    echo "the Slurm node did not become idle; logs in $state/log" >&2
    exit 1
    ;;
down)
    for pid in slurmd slurmctld munged; do
        [ -f "$state/$pid.pid" ] && kill "$(cat "$state/$pid.pid")" 2>/dev/null || true
    done
    ;;
*)
    echo "usage: cluster.sh up|down STATE_DIR" >&2
    exit 2
    ;;
esac
