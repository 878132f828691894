# Helpers shared by scripts/*-up.sh and *-down.sh (sourced, not run).
# Every daemon these scripts start has its pid file under $SERVICES_DIR; they stop only those.
set -euo pipefail

SERVICES_DIR=$(realpath -m "${MLGRAPH_SERVICES_DIR:-/tmp/mlgraph-services}")
REPO_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

say() { echo "[$(basename "$0")] $*"; }
die() { echo "[$(basename "$0")] error: $*" >&2; exit 1; }

# apt_install CMD PKG...: install Debian packages when CMD is not on PATH; `apt-get update`
# only if the install fails on stale lists.
apt_install() {
  local cmd=$1; shift
  command -v "$cmd" >/dev/null 2>&1 && return 0
  [ "$(id -u)" = 0 ] || die "$cmd is missing and installing $* needs root (apt-get)"
  say "installing $* (apt-get)"
  export DEBIAN_FRONTEND=noninteractive
  apt-get install -y -qq --no-install-recommends "$@" >/dev/null 2>&1 \
    || { apt-get update -qq >/dev/null && apt-get install -y -qq --no-install-recommends "$@" >/dev/null; } \
    || die "apt-get install $* failed"
  command -v "$cmd" >/dev/null 2>&1 || die "$cmd still missing after installing $*"
}

# alive PIDFILE: the process named in PIDFILE runs.
alive() { [ -s "$1" ] && kill -0 "$(cat "$1")" 2>/dev/null; }

# wait_for SECONDS WHAT CMD...: poll CMD every second until it succeeds, or fail naming WHAT.
wait_for() {
  local limit=$1 what=$2; shift 2
  local deadline=$((SECONDS + limit))
  until "$@" >/dev/null 2>&1; do
    [ "$SECONDS" -lt "$deadline" ] || die "$what not ready after ${limit}s"
    sleep 1
  done
}

# stop_pidfile PIDFILE NAME [group]: TERM the process of PIDFILE (with "group": its whole process
# group, for a leader started by setsid), KILL after 20 s, remove the file.
stop_pidfile() {
  local pidfile=$1 name=$2 pid target t=0
  if ! alive "$pidfile"; then rm -f "$pidfile"; return 0; fi
  pid=$(cat "$pidfile")
  target=$pid
  [ "${3:-}" = group ] && target=-$pid
  say "stopping $name (pid $pid)"
  kill -- "$target" 2>/dev/null || true
  while kill -0 "$pid" 2>/dev/null && [ "$t" -lt 20 ]; do sleep 1; t=$((t + 1)); done
  kill -0 "$pid" 2>/dev/null && kill -9 -- "$target" 2>/dev/null || true
  rm -f "$pidfile"
}

# PostgreSQL: Debian keeps the server binaries off PATH, under /usr/lib/postgresql/VERSION/bin.
pg_bin() { ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1; }
# as_pg CMD...: run as `postgres` when we are root (PostgreSQL refuses root), else as ourselves.
as_pg() { if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi; }
