#!/bin/sh
# A node of the demo Slurm cluster (run under `docker run --init`, so finished job steps are reaped):
# munged with the cluster's key, then slurmctld (controller) or slurmd (compute node) in the foreground,
# logging to the container's output (`docker logs`).
#
# Mounted by suite/containers/slurm_cluster.py:
#   /etc/slurm                          the nodes' slurm.conf (read-only)
#   /run/trainbench-slurm/munge.key     the cluster's munge key (read-only; copied with munge's owner,
#                                       whose uid differs between the image and the host)
set -eu
role=${1:-node}
install -o munge -g munge -m 0400 /run/trainbench-slurm/munge.key /etc/munge/munge.key
install -d -o munge -g munge -m 0755 /run/munge
runuser -u munge -- /usr/sbin/munged
case "$role" in
  controller)
    install -d -m 0755 /var/spool/slurmctld
    exec /usr/sbin/slurmctld -D
    ;;
  node)
    install -d -m 0755 /var/spool/slurmd
    exec /usr/sbin/slurmd -D -N "$(hostname)"
    ;;
  *)
    echo "usage: trainbench-slurm-node controller|node" >&2
    exit 2
    ;;
esac
