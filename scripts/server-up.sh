#!/usr/bin/env bash
# A team MLflow server on this machine: PostgreSQL (backend store) and `mlflow server` (REST API,
# UI, proxied artifacts), with data, logs and pid files in $MLGRAPH_SERVICES_DIR/{postgres,mlflow}
# (default /tmp/mlgraph-services). Installs Debian's postgresql when missing; mlflow and psycopg
# come from the project's .venv (extra `server`). Idempotent. Stop with scripts/server-down.sh.
# Environment: MLGRAPH_SERVICES_DIR; MLGRAPH_PG_PORT (default 5433); MLGRAPH_SERVER_HOST (default
# 127.0.0.1); MLGRAPH_SERVER_PORT (default 5000); MLGRAPH_SERVER_WORKERS (default 2);
# MLGRAPH_SERVER_ALLOWED_HOSTS (extra Host names clients use, for a server reached from other
# machines); MLGRAPH_SERVER_WAIT (seconds, default 180).
source "$(dirname "$0")/lib.sh"

PG_DIR=$SERVICES_DIR/postgres
ML_DIR=$SERVICES_DIR/mlflow
PG_PORT=${MLGRAPH_PG_PORT:-5433}
HOST=${MLGRAPH_SERVER_HOST:-127.0.0.1}
PORT=${MLGRAPH_SERVER_PORT:-5000}
WAIT=${MLGRAPH_SERVER_WAIT:-180}
MLFLOW=$REPO_DIR/.venv/bin/mlflow
PYTHON=$REPO_DIR/.venv/bin/python

[ -x "$MLFLOW" ] || die "$MLFLOW missing: run 'make install' first"
"$PYTHON" -c 'import psycopg' 2>/dev/null || die "psycopg missing in .venv: pip install -e '.[server]'"
[ -n "$(pg_bin)" ] || apt_install pg_ctlcluster postgresql
PG_BIN=$(pg_bin)
[ -x "$PG_BIN/initdb" ] || die "no PostgreSQL server binaries under /usr/lib/postgresql"

psql_pg() { as_pg "$PG_BIN/psql" -X -q -h "$PG_DIR/run" -p "$PG_PORT" -U postgres -d postgres -v ON_ERROR_STOP=1 "$@"; }

mkdir -p "$PG_DIR/run" "$PG_DIR/log" "$ML_DIR/artifacts" "$ML_DIR/run" "$ML_DIR/log"
[ "$(id -u)" = 0 ] && chown postgres: "$PG_DIR" "$PG_DIR/run" "$PG_DIR/log"
[ -s "$PG_DIR/mlflow.pass" ] || { head -c 18 /dev/urandom | base64 | tr -d '/+=' > "$PG_DIR/mlflow.pass"; chmod 600 "$PG_DIR/mlflow.pass"; }
PASS=$(cat "$PG_DIR/mlflow.pass")

if [ ! -s "$PG_DIR/data/PG_VERSION" ]; then
  as_pg "$PG_BIN/initdb" -D "$PG_DIR/data" -U postgres --auth-local=peer --auth-host=scram-sha-256 \
    >"$PG_DIR/log/initdb.log" 2>&1 || die "initdb failed (see $PG_DIR/log/initdb.log)"
fi
if ! as_pg "$PG_BIN/pg_ctl" -D "$PG_DIR/data" status >/dev/null 2>&1; then
  as_pg "$PG_BIN/pg_ctl" -D "$PG_DIR/data" -l "$PG_DIR/log/postgres.log" -w -t "$WAIT" \
    -o "-p $PG_PORT -k $PG_DIR/run -c listen_addresses=127.0.0.1" start >/dev/null \
    || die "PostgreSQL did not start (see $PG_DIR/log/postgres.log)"
fi
psql_pg -c "DO \$\$ BEGIN
  IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'mlflow') THEN CREATE ROLE mlflow LOGIN; END IF;
  END \$\$; ALTER ROLE mlflow PASSWORD '$PASS';"
[ "$(psql_pg -tAc "SELECT 1 FROM pg_database WHERE datname = 'mlflow'")" = 1 ] \
  || psql_pg -c "CREATE DATABASE mlflow OWNER mlflow"

URI=http://$HOST:$PORT
health() { "$PYTHON" -c "import urllib.request as u; u.urlopen('$URI/health', timeout=5).read()"; }
if ! alive "$ML_DIR/run/mlflow.pid"; then
  health 2>/dev/null && die "port $PORT already answers /health, but not for a server this script started"
  allowed=()
  [ -n "${MLGRAPH_SERVER_ALLOWED_HOSTS:-}" ] && allowed=(--allowed-hosts "$MLGRAPH_SERVER_ALLOWED_HOSTS")
  # setsid: the server and its workers form one process group, which server-down stops. The
  # store URI goes by environment, keeping the password out of `ps`. No GenAI job runner (its
  # queue consumers take ~1.4 GB); workers get 30 s to answer uvicorn's health check at start.
  MLFLOW_BACKEND_STORE_URI="postgresql+psycopg://mlflow:$PASS@127.0.0.1:$PG_PORT/mlflow" \
  MLFLOW_SERVER_ENABLE_JOB_EXECUTION=false \
  setsid "$MLFLOW" server --artifacts-destination "$ML_DIR/artifacts" \
    --host "$HOST" --port "$PORT" --workers "${MLGRAPH_SERVER_WORKERS:-2}" "${allowed[@]}" \
    --uvicorn-opts "--timeout-worker-healthcheck 30" \
    </dev/null >"$ML_DIR/log/mlflow.log" 2>&1 &
  echo $! > "$ML_DIR/run/mlflow.pid"
fi
wait_for "$WAIT" "MLflow server at $URI (see $ML_DIR/log/mlflow.log)" health
alive "$ML_DIR/run/mlflow.pid" || die "MLflow server exited (see $ML_DIR/log/mlflow.log)"
say "MLflow server up, PostgreSQL on 127.0.0.1:$PG_PORT, artifacts in $ML_DIR/artifacts"
say "use: python -m run tracking=server tracking.uri=$URI ...  (or MLFLOW_TRACKING_URI=$URI)"
