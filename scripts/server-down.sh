#!/usr/bin/env bash
# Stops the MLflow server, its TLS proxy and PostgreSQL that scripts/server-up.sh started; keeps
# their data.
source "$(dirname "$0")/lib.sh"

PG_DIR=$SERVICES_DIR/postgres
stop_pidfile "$SERVICES_DIR/mlflow/tls/nginx.pid" "nginx (TLS proxy)"
stop_pidfile "$SERVICES_DIR/mlflow/run/mlflow.pid" "mlflow server" group
if [ -s "$PG_DIR/data/postmaster.pid" ]; then
  say "stopping PostgreSQL ($PG_DIR/data)"
  as_pg "$(pg_bin)/pg_ctl" -D "$PG_DIR/data" -m fast -w stop >/dev/null
fi
say "server down"
