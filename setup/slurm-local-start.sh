#!/bin/bash
# Start a real single-node Slurm cluster on loopback (munge, slurmctld, slurmd) so the cluster
# path of `stability sweep --slurm` can be tried on one machine, and tested. Needs root.
# Why each setting is what it is: the comment beside it below.
#
#   setup/slurm-local-start.sh [DIR]      # state, logs, pid files and slurm.conf under DIR
#   (STABILITY_SLURM_MAX_ARRAY=N sets MaxArraySize, to try the splitting of large arrays)
#   export SLURM_CONF=DIR/slurm.conf        # for sbatch, squeue, scontrol
#   setup/slurm-local-stop.sh [DIR]       # stops the daemons by their PIDs
set -euo pipefail
DIR=${1:-/tmp/stability-slurm}
[ "$(id -u)" = 0 ] || { echo "slurm-local-start: needs root" >&2; exit 1; }
for tool in slurmctld slurmd sbatch munged; do
    command -v "$tool" >/dev/null || { echo "slurm-local-start: $tool missing (apt-get install slurmctld slurmd slurm-client munge)" >&2; exit 1; }
done
mkdir -p "$DIR/state" "$DIR/spool"

# munge: /run/munge is normally made by systemd; start munged only if none answers
if ! munge -n 2>/dev/null | unmunge >/dev/null 2>&1; then
    mkdir -p /run/munge && chown munge:munge /run/munge
    [ -s /etc/munge/munge.key ] || mungekey --create
    runuser -u munge -- /usr/sbin/munged
    for _ in $(seq 50); do munge -n 2>/dev/null | unmunge >/dev/null 2>&1 && break; sleep 0.1; done
    cp /run/munge/munged.pid "$DIR/munged.pid"
fi
munge -n | unmunge >/dev/null || { echo "slurm-local-start: munge does not work" >&2; exit 1; }

HOST=$(hostname -s)
read -r CPUS MEM < <(slurmd -C | sed -n 's/.*CPUs=\([0-9]*\).*RealMemory=\([0-9]*\).*/\1 \2/p')
cat > "$DIR/slurm.conf" <<CONF
# written by setup/slurm-local-start.sh
ClusterName=stability
SlurmctldHost=$HOST(127.0.0.1)
SlurmUser=root
AuthType=auth/munge
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
ReturnToService=2
MpiDefault=none
MailProg=/bin/true
SchedulerParameters=batch_sched_delay=0,sched_min_interval=0
MaxArraySize=${STABILITY_SLURM_MAX_ARRAY:-1001}
StateSaveLocation=$DIR/state
SlurmdSpoolDir=$DIR/spool
SlurmctldPidFile=$DIR/slurmctld.pid
SlurmdPidFile=$DIR/slurmd.pid
SlurmctldLogFile=$DIR/slurmctld.log
SlurmdLogFile=$DIR/slurmd.log
NodeName=$HOST NodeAddr=127.0.0.1 CPUs=$CPUS RealMemory=$MEM State=UNKNOWN
PartitionName=debug Nodes=$HOST Default=YES MaxTime=INFINITE State=UP
CONF
export SLURM_CONF="$DIR/slurm.conf"
slurmctld
slurmd
for _ in $(seq 100); do
    state=$(sinfo -h -o %T 2>/dev/null || true)
    [ "$state" = idle ] && break
    sleep 0.2
done
[ "$(sinfo -h -o %T)" = idle ] || { echo "slurm-local-start: node not idle: $(sinfo -h -o %T)" >&2; exit 1; }
echo "slurm-local: cluster up ($HOST, $CPUS CPUs); export SLURM_CONF=$DIR/slurm.conf"
