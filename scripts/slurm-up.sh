#!/usr/bin/env bash
# A one-node SLURM cluster on this machine, as root without systemd: munged, MariaDB + slurmdbd
# (accounting, so that `sacct` reports job states: submitit reads them to see a cancelled or
# failed job), slurmctld, slurmd. Key, configs, databases, logs and pid files live in
# $MLGRAPH_SERVICES_DIR/slurm (default /tmp/mlgraph-services/slurm). Installs Debian's
# slurm-wlm, slurmdbd, munge and mariadb-server when missing. Idempotent: a second call
# starts what is not running and checks the cluster. Stop it with scripts/slurm-down.sh.
# Environment: MLGRAPH_SERVICES_DIR; MLGRAPH_SLURM_PORT (slurmctld, default 6817; slurmd,
# slurmdbd and MariaDB take the next three ports); MLGRAPH_SLURM_WAIT (seconds, default 60).
source "$(dirname "$0")/lib.sh"

DIR=$SERVICES_DIR/slurm
CONF=$DIR/etc/slurm.conf
PORT=${MLGRAPH_SLURM_PORT:-6817}
WAIT=${MLGRAPH_SLURM_WAIT:-60}
NODE=$(hostname -s)
# Clients (sacctmgr included) reach munged at its default socket only.
SOCKET=/run/munge/munge.socket.2
DB_SOCKET=$DIR/mysql/mysqld.sock
export SLURM_CONF=$CONF  # slurmdbd.conf is read from the same folder
[ "$(id -u)" = 0 ] || die "the daemons run as root (SlurmUser=root, munged on /run/munge): run as root"

apt_install slurmctld slurm-wlm munge
apt_install slurmdbd slurmdbd
apt_install mariadbd mariadb-server mariadb-client

mkdir -p "$DIR"/{etc,state,spool,log,run,munge,mysql}
chmod 700 "$DIR/munge"  # slurm.conf stays readable by every client; secrets are 0600/0400 files
[ -s "$DIR/munge/munge.key" ] || { head -c 1024 /dev/urandom > "$DIR/munge/munge.key"; chmod 400 "$DIR/munge/munge.key"; }
[ -s "$DIR/etc/db.pass" ] || { head -c 18 /dev/urandom | base64 | tr -d '/+=' > "$DIR/etc/db.pass"; chmod 600 "$DIR/etc/db.pass"; }

start_munge() {
  mkdir -p "$(dirname "$SOCKET")"
  alive "$DIR/run/munged.pid" || munged --force --key-file="$DIR/munge/munge.key" --socket="$SOCKET" \
    --pid-file="$DIR/run/munged.pid" --log-file="$DIR/log/munged.log" --seed-file="$DIR/munge/munge.seed"
  wait_for 10 munged munge -n -S "$SOCKET"
}

# MariaDB on loopback for slurmdbd, then slurmdbd itself, and the cluster registered in it.
start_accounting() {
  local sql=(mariadb --no-defaults -S "$DB_SOCKET" -u root)
  if [ ! -d "$DIR/mysql/data/mysql" ]; then
    mariadb-install-db --no-defaults --user=root --datadir="$DIR/mysql/data" \
      --auth-root-authentication-method=socket --skip-test-db >"$DIR/log/mariadb-install.log" 2>&1 \
      || die "mariadb-install-db failed (see $DIR/log/mariadb-install.log)"
  fi
  if ! alive "$DIR/run/mariadbd.pid"; then
    setsid mariadbd --no-defaults --user=root --datadir="$DIR/mysql/data" --socket="$DB_SOCKET" \
      --bind-address=127.0.0.1 --port=$((PORT + 3)) --skip-name-resolve --innodb-lock-wait-timeout=900 \
      --pid-file="$DIR/run/mariadbd.pid" --log-error="$DIR/log/mariadb.log" </dev/null >/dev/null 2>&1 &
  fi
  wait_for "$WAIT" "MariaDB (see $DIR/log/mariadb.log)" "${sql[@]}" -e 'SELECT 1'
  "${sql[@]}" -e "CREATE USER IF NOT EXISTS 'slurm'@'127.0.0.1' IDENTIFIED BY '$(cat "$DIR/etc/db.pass")';
    GRANT ALL ON slurm_acct_db.* TO 'slurm'@'127.0.0.1';"
  cat > "$DIR/etc/slurmdbd.conf" <<CONFEOF
# Written by scripts/slurm-up.sh: accounting daemon on loopback, MariaDB of $DIR/mysql.
AuthType=auth/munge
DbdHost=$NODE
DbdAddr=127.0.0.1
DbdPort=$((PORT + 2))
SlurmUser=root
PidFile=$DIR/run/slurmdbd.pid
LogFile=$DIR/log/slurmdbd.log
StorageType=accounting_storage/mysql
StorageHost=127.0.0.1
StoragePort=$((PORT + 3))
StorageUser=slurm
StoragePass=$(cat "$DIR/etc/db.pass")
StorageLoc=slurm_acct_db
CONFEOF
  chmod 600 "$DIR/etc/slurmdbd.conf"
  alive "$DIR/run/slurmdbd.pid" || slurmdbd
  wait_for "$WAIT" "slurmdbd (see $DIR/log/slurmdbd.log)" sacctmgr -n list cluster
  sacctmgr -n -P list cluster format=cluster | grep -qx mlgraph || sacctmgr -i -Q add cluster mlgraph >/dev/null
}

write_slurm_conf() {
  # Memory a little below the machine's (slurmd drains a node that reports less than configured).
  local mem
  mem=$(free -m | awk '/^Mem:/ {print int($2 * 0.95)}')
  cat > "$CONF.new" <<CONFEOF
# Written by scripts/slurm-up.sh: one node ($NODE), one partition (main, the default),
# root daemons, no cgroups.
ClusterName=mlgraph
SlurmctldHost=$NODE(127.0.0.1)
SlurmctldPort=$PORT
SlurmdPort=$((PORT + 1))
SlurmUser=root
AuthType=auth/munge
# A requeued job may start again after cred_expire seconds (default 120); a small test cluster
# need not wait that long.
AuthInfo=cred_expire=10
CredType=cred/munge
StateSaveLocation=$DIR/state
SlurmdSpoolDir=$DIR/spool
SlurmctldPidFile=$DIR/run/slurmctld.pid
SlurmdPidFile=$DIR/run/slurmd.pid
SlurmctldLogFile=$DIR/log/slurmctld.log
SlurmdLogFile=$DIR/log/slurmd.log
# No systemd or cgroups here: track job processes through /proc, bind no tasks.
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/linux
AccountingStorageType=accounting_storage/slurmdbd
AccountingStorageHost=127.0.0.1
AccountingStoragePort=$((PORT + 2))
MpiDefault=none
MailProg=/bin/true
# Jobs get CPUs, not whole nodes: 1-CPU jobs run side by side, the rest wait in the queue.
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
ReturnToService=2
KillWait=10
InactiveLimit=0
MinJobAge=300
NodeName=$NODE NodeAddr=127.0.0.1 CPUs=$(nproc) RealMemory=$mem State=UNKNOWN
PartitionName=main Nodes=$NODE Default=YES MaxTime=INFINITE State=UP
CONFEOF
  mv "$CONF.new" "$CONF"
  # Plain `sinfo`/`sbatch` read /etc/slurm/slurm.conf: point it here unless another config is there.
  if [ ! -e /etc/slurm/slurm.conf ] || [ "$(readlink /etc/slurm/slurm.conf)" = "$CONF" ]; then
    mkdir -p /etc/slurm && ln -sfn "$CONF" /etc/slurm/slurm.conf
  else
    say "/etc/slurm/slurm.conf is not ours: export SLURM_CONF=$CONF before using this cluster"
  fi
}

node_ready() { sinfo -h -n "$NODE" -o %t | grep -Eq '^(idle|mix|alloc)'; }

write_slurm_conf  # sacctmgr, run in start_accounting, reads it too
start_munge
start_accounting
# -c: a fresh controller forgets the jobs of an earlier session (a killed test's array would
# otherwise be recovered and hold the node), so every start gives an empty, idle cluster.
alive "$DIR/run/slurmctld.pid" || slurmctld -c
alive "$DIR/run/slurmd.pid" || slurmd -N "$NODE"
wait_for "$WAIT" "SLURM node $NODE (see $DIR/log/slurmctld.log, slurmd.log)" node_ready
timeout "$WAIT" srun -N1 -n1 -t 1 hostname >/dev/null || die "srun hostname failed (see $DIR/log)"
job=$(timeout "$WAIT" sbatch --parsable --wait -t 1 -o /dev/null --wrap=true) || die "sbatch --wait failed (see $DIR/log)"
wait_for 30 "sacct record of job $job" bash -c "sacct -n -X -j $job -o State | grep -q COMPLETED"
say "SLURM up: node $NODE, $(nproc) CPUs, partition main, sacct works; SLURM_CONF=$CONF"
