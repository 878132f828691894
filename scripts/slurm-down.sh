#!/usr/bin/env bash
# Stops the daemons scripts/slurm-up.sh started, by their pid files; keeps the state folder
# (jobs, accounting database) for the next slurm-up.
source "$(dirname "$0")/lib.sh"

DIR=$SERVICES_DIR/slurm
stop_pidfile "$DIR/run/slurmd.pid" slurmd
stop_pidfile "$DIR/run/slurmctld.pid" slurmctld
stop_pidfile "$DIR/run/slurmdbd.pid" slurmdbd
stop_pidfile "$DIR/run/mariadbd.pid" mariadbd
stop_pidfile "$DIR/run/munged.pid" munged
if [ "$(readlink /etc/slurm/slurm.conf 2>/dev/null)" = "$DIR/etc/slurm.conf" ]; then rm -f /etc/slurm/slurm.conf; fi
say "SLURM down"
