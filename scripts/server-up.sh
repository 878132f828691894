#!/usr/bin/env bash
# A team MLflow server on this machine, open to its members only: PostgreSQL (backend store and
# the user store of MLflow's basic-auth app) and `mlflow server --app-name basic-auth` (REST API,
# UI, proxied artifacts), with data, logs, secrets and pid files in
# $MLGRAPH_SERVICES_DIR/{postgres,mlflow} (default /tmp/mlgraph-services). Installs Debian's
# postgresql when missing; mlflow, Flask-WTF and psycopg come from the project's .venv (extra
# `server`). Idempotent. Stop with scripts/server-down.sh.
#
# Secrets (mode 600, created once): mlflow/secrets/admin.pass (the password of the admin user
# `admin`, set when the user store is created; MLflow's default password never exists),
# mlflow/secrets/flask.key (MLFLOW_FLASK_SERVER_SECRET_KEY, shared by all server workers),
# mlflow/secrets/proxy.key (vouches for the client address the TLS proxy passes on),
# postgres/mlflow.pass (the database role's password). They travel in files of mode 600,
# environment variables and stdin, never on a command line. Every request needs a user and
# password (MLFLOW_TRACKING_USERNAME/PASSWORD or ~/.mlflow/credentials); members see and change
# only the experiments they created or were granted (default_permission NO_PERMISSIONS); the list
# of users and groups is the admin's only; failed logins are limited per client address
# (scripts/mlgraph_server_auth.py). The server runs with umask 077: its artifacts (mlflow/artifacts)
# are readable by the server's user only, and older ones are made so at every start.
#
# Environment: MLGRAPH_SERVICES_DIR; MLGRAPH_PG_PORT (default 5433); MLGRAPH_SERVER_HOST (default
# 127.0.0.1); MLGRAPH_SERVER_PORT (default 5000); MLGRAPH_SERVER_WORKERS (default 2);
# MLGRAPH_SERVER_ALLOWED_HOSTS (extra Host names clients use, for a server reached from other
# machines); MLGRAPH_SERVER_DEFAULT_PERMISSION (default NO_PERMISSIONS; READ lets every member
# read every experiment); MLGRAPH_SERVER_AUTH_CACHE_SECONDS (default 60: how long a worker trusts a
# password it checked; 0 checks every request); MLGRAPH_SERVER_LOGIN_BURST (default 10) and
# MLGRAPH_SERVER_LOGIN_INTERVAL (seconds, default 10): a client address may fail that many logins
# in a row, then one more per interval; MLGRAPH_SERVER_WAIT (seconds, default 180);
# MLGRAPH_SERVER_TLS_PORT (unset: none): also serve https on that port through nginx (Debian's,
# installed when missing) with a self-signed certificate, mlflow/tls/cert.pem, for clients that
# set MLFLOW_TRACKING_SERVER_CERT_PATH to it (a real server uses its CA-signed certificate);
# MLGRAPH_SERVER_TLS_RATE (requests per second, default 100) and MLGRAPH_SERVER_TLS_BURST (default
# 2000): the proxy's limit on all requests of one client address (a run makes about 20).
source "$(dirname "$0")/lib.sh"

PG_DIR=$SERVICES_DIR/postgres
ML_DIR=$SERVICES_DIR/mlflow
SECRETS=$ML_DIR/secrets
PG_PORT=${MLGRAPH_PG_PORT:-5433}
HOST=${MLGRAPH_SERVER_HOST:-127.0.0.1}
PORT=${MLGRAPH_SERVER_PORT:-5000}
WAIT=${MLGRAPH_SERVER_WAIT:-180}
DEFAULT_PERMISSION=${MLGRAPH_SERVER_DEFAULT_PERMISSION:-NO_PERMISSIONS}
AUTH_CACHE=${MLGRAPH_SERVER_AUTH_CACHE_SECONDS:-60}
LOGIN_BURST=${MLGRAPH_SERVER_LOGIN_BURST:-10}
LOGIN_INTERVAL=${MLGRAPH_SERVER_LOGIN_INTERVAL:-10}
TLS_RATE=${MLGRAPH_SERVER_TLS_RATE:-100}
TLS_BURST=${MLGRAPH_SERVER_TLS_BURST:-2000}
MLFLOW=$REPO_DIR/.venv/bin/mlflow
PYTHON=$REPO_DIR/.venv/bin/python

[ -x "$MLFLOW" ] || die "$MLFLOW missing: run 'make install' first"
"$PYTHON" -c 'import psycopg, flask_wtf' 2>/dev/null || die "psycopg or Flask-WTF missing in .venv: pip install -e '.[server]'"
for n in "$LOGIN_BURST" "$LOGIN_INTERVAL" "$TLS_RATE" "$TLS_BURST"; do
  case $n in ''|*[!0-9]*|0) die "MLGRAPH_SERVER_LOGIN_BURST/LOGIN_INTERVAL/TLS_RATE/TLS_BURST: whole numbers above 0, not '$n'";; esac
done
case $DEFAULT_PERMISSION in READ|USE|EDIT|MANAGE|NO_PERMISSIONS) ;; *) die "MLGRAPH_SERVER_DEFAULT_PERMISSION=$DEFAULT_PERMISSION: READ, USE, EDIT, MANAGE or NO_PERMISSIONS";; esac
[ -n "$(pg_bin)" ] || apt_install pg_ctlcluster postgresql
PG_BIN=$(pg_bin)
[ -x "$PG_BIN/initdb" ] || die "no PostgreSQL server binaries under /usr/lib/postgresql"

psql_pg() { as_pg "$PG_BIN/psql" -X -q -h "$PG_DIR/run" -p "$PG_PORT" -U postgres -d postgres -v ON_ERROR_STOP=1 "$@"; }
# secret FILE: a random secret in FILE (mode 600), made once.
secret() { [ -s "$1" ] || (umask 077; head -c 24 /dev/urandom | base64 | tr -d '/+=' > "$1"); }

mkdir -p "$PG_DIR/run" "$PG_DIR/log" "$ML_DIR/artifacts" "$ML_DIR/run" "$ML_DIR/log"
(umask 077; mkdir -p "$SECRETS")
chmod 700 "$SECRETS"
[ "$(id -u)" = 0 ] && chown postgres: "$PG_DIR" "$PG_DIR/run" "$PG_DIR/log"
secret "$PG_DIR/mlflow.pass"
secret "$SECRETS/admin.pass"
secret "$SECRETS/flask.key"
secret "$SECRETS/proxy.key"
PASS=$(cat "$PG_DIR/mlflow.pass")
# Artifacts: the server's user only (it writes new ones with umask 077; this fixes older ones).
chmod -R go-rwx "$ML_DIR/artifacts"

if [ ! -s "$PG_DIR/data/PG_VERSION" ]; then
  as_pg "$PG_BIN/initdb" -D "$PG_DIR/data" -U postgres --auth-local=peer --auth-host=scram-sha-256 \
    >"$PG_DIR/log/initdb.log" 2>&1 || die "initdb failed (see $PG_DIR/log/initdb.log)"
fi
if ! as_pg "$PG_BIN/pg_ctl" -D "$PG_DIR/data" status >/dev/null 2>&1; then
  as_pg "$PG_BIN/pg_ctl" -D "$PG_DIR/data" -l "$PG_DIR/log/postgres.log" -w -t "$WAIT" \
    -o "-p $PG_PORT -k $PG_DIR/run -c listen_addresses=127.0.0.1" start >/dev/null \
    || die "PostgreSQL did not start (see $PG_DIR/log/postgres.log)"
fi
# The password goes by stdin (a here-document), never on psql's command line.
psql_pg <<SQLEOF
DO \$\$ BEGIN
  IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'mlflow') THEN CREATE ROLE mlflow LOGIN; END IF;
END \$\$;
ALTER ROLE mlflow PASSWORD '$PASS';
SQLEOF
for db in mlflow mlflow_auth; do
  [ "$(psql_pg -tAc "SELECT 1 FROM pg_database WHERE datname = '$db'")" = 1 ] \
    || psql_pg -c "CREATE DATABASE $db OWNER mlflow"
done

# The basic-auth app's config: the user store in PostgreSQL, the admin's name (its password comes
# from MLFLOW_AUTH_ADMIN_PASSWORD when the store is first created), what a user may do with an
# experiment nobody granted them, and the password check (scripts/mlgraph_server_auth.py: MLflow's,
# with failed logins limited per client and the user list for admins only). It names the database
# password and the proxy key: mode 600.
AUTH_INI=$SECRETS/basic_auth.ini
(umask 077; cat > "$AUTH_INI.new" <<INIEOF
# Written by scripts/server-up.sh.
[mlflow]
default_permission = $DEFAULT_PERMISSION
database_uri = postgresql+psycopg://mlflow:$PASS@127.0.0.1:$PG_PORT/mlflow_auth
admin_username = admin
authorization_function = mlgraph_server_auth:authenticate
# A password checked once is trusted for this long by the worker that checked it (each check is
# a deliberately slow hash; a sweep makes hundreds of requests). A changed or removed password
# may still work on other workers for up to this long.
auth_cache_ttl_seconds = $AUTH_CACHE

[mlgraph]
# A client address may fail this many logins in a row, then one more every interval; until then
# its requests are answered 429 before any password is checked. Valid logins cost nothing.
failed_login_burst = $LOGIN_BURST
failed_login_interval_seconds = $LOGIN_INTERVAL
failed_login_state = $ML_DIR/run/failed_logins.sqlite
# Sent by the TLS proxy with the client's address (X-Real-IP), which is trusted only with it.
proxy_key = $(cat "$SECRETS/proxy.key")
INIEOF
)
mv "$AUTH_INI.new" "$AUTH_INI"

URI=http://$HOST:$PORT
health() { "$PYTHON" -c "import urllib.request as u; u.urlopen('$URI/health', timeout=5).read()"; }
if ! alive "$ML_DIR/run/mlflow.pid"; then
  health 2>/dev/null && die "port $PORT already answers /health, but not for a server this script started"
  allowed=()
  [ -n "${MLGRAPH_SERVER_ALLOWED_HOSTS:-}" ] && allowed=(--allowed-hosts "$MLGRAPH_SERVER_ALLOWED_HOSTS")
  # setsid: the server and its workers form one process group, which server-down stops (setsid
  # runs in the subshell's place, so $! is the server's pid). Store URI and secrets go by
  # environment, keeping them out of `ps`; umask 077 keeps artifacts and the failed-login counts
  # to the server's user. No GenAI job runner (its queue consumers take ~1.4 GB); workers get 30 s
  # to answer uvicorn's health check at start. --no-proxy-headers: uvicorn would take the client
  # address from any X-Forwarded-For sent from 127.0.0.1; the TLS proxy vouches for it instead.
  (
    umask 077
    export MLFLOW_BACKEND_STORE_URI="postgresql+psycopg://mlflow:$PASS@127.0.0.1:$PG_PORT/mlflow"
    export MLFLOW_AUTH_CONFIG_PATH="$AUTH_INI"
    MLFLOW_AUTH_ADMIN_PASSWORD=$(cat "$SECRETS/admin.pass")
    MLFLOW_FLASK_SERVER_SECRET_KEY=$(cat "$SECRETS/flask.key")
    export MLFLOW_AUTH_ADMIN_PASSWORD MLFLOW_FLASK_SERVER_SECRET_KEY
    export MLFLOW_SERVER_ENABLE_JOB_EXECUTION=false
    export PYTHONPATH="$REPO_DIR/scripts${PYTHONPATH:+:$PYTHONPATH}"
    exec setsid "$MLFLOW" server --app-name basic-auth --artifacts-destination "$ML_DIR/artifacts" \
      --host "$HOST" --port "$PORT" --workers "${MLGRAPH_SERVER_WORKERS:-2}" "${allowed[@]}" \
      --uvicorn-opts "--timeout-worker-healthcheck 30 --no-proxy-headers" \
      </dev/null >"$ML_DIR/log/mlflow.log" 2>&1
  ) &
  echo $! > "$ML_DIR/run/mlflow.pid"
fi
wait_for "$WAIT" "MLflow server at $URI (see $ML_DIR/log/mlflow.log)" health
alive "$ML_DIR/run/mlflow.pid" || die "MLflow server exited (see $ML_DIR/log/mlflow.log)"

# Only members get in: no user and password, or a wrong one, is refused; the admin's secret works.
# status [USER]: the HTTP status of a search as USER, whose password is in $STATUS_PASSWORD (the
# environment: never on a command line).
status() { STATUS_USER=${1:-} "$PYTHON" - "$URI" <<'PYEOF'
import base64, os, sys, urllib.error, urllib.request
uri, user, password = sys.argv[1], os.environ["STATUS_USER"], os.environ.get("STATUS_PASSWORD", "")
request = urllib.request.Request(uri + "/api/2.0/mlflow/experiments/search?max_results=1")
if user:
    request.add_header("Authorization", "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode())
try:
    print(urllib.request.urlopen(request, timeout=10).status)
except urllib.error.HTTPError as exc:
    print(exc.code)
PYEOF
}
[ "$(status)" = 401 ] || die "the MLflow server at $URI answers a request without a password: it is not the basic-auth app"
[ "$(STATUS_PASSWORD=password1234 status admin)" = 401 ] || die "the MLflow server at $URI accepts MLflow's well-known default admin password"
[ "$(STATUS_PASSWORD=$(cat "$SECRETS/admin.pass") status admin)" = 200 ] \
  || die "the admin password in $SECRETS/admin.pass is refused (a user store made by another set-up? see $ML_DIR/log/mlflow.log)"
if [ -n "${MLGRAPH_SERVER_TLS_PORT:-}" ]; then
  TLS=$ML_DIR/tls
  apt_install nginx nginx
  mkdir -p "$TLS/tmp"
  if [ ! -s "$TLS/cert.pem" ]; then
    (umask 077; openssl req -x509 -newkey rsa:2048 -nodes -days 365 -subj "/CN=$HOST" \
      -addext "subjectAltName=IP:127.0.0.1,DNS:localhost" -keyout "$TLS/key.pem" -out "$TLS/cert.pem" 2>/dev/null) \
      || die "openssl could not make a certificate"
    chmod 644 "$TLS/cert.pem"
  fi
  # The reverse proxy of docs/user_guide/team_server.md, on this machine: TLS ends here, the
  # MLflow server stays on $HOST:$PORT. Each client address may send $TLS_RATE requests a second
  # (bursts of $TLS_BURST), beyond that 429; failed logins have their own, much lower limit in the
  # server, which trusts the X-Real-IP of requests carrying the proxy key. The file names the key:
  # mode 600 (nginx reads it as root).
  (umask 077; cat > "$TLS/nginx.conf.new" <<NGINXEOF
# Written by scripts/server-up.sh.
pid $TLS/nginx.pid;
error_log $TLS/error.log;
worker_processes 1;
events { worker_connections 256; }
http {
  access_log $TLS/access.log;
  limit_req_zone \$binary_remote_addr zone=clients:10m rate=${TLS_RATE}r/s;
  limit_req_status 429;
  client_body_temp_path $TLS/tmp/body;
  proxy_temp_path $TLS/tmp/proxy;
  fastcgi_temp_path $TLS/tmp/fastcgi;
  uwsgi_temp_path $TLS/tmp/uwsgi;
  scgi_temp_path $TLS/tmp/scgi;
  server {
    listen $HOST:$MLGRAPH_SERVER_TLS_PORT ssl;
    ssl_certificate $TLS/cert.pem;
    ssl_certificate_key $TLS/key.pem;
    ssl_protocols TLSv1.2 TLSv1.3;
    client_max_body_size 0;
    location / {
      limit_req zone=clients burst=$TLS_BURST nodelay;
      proxy_pass http://$HOST:$PORT;
      proxy_set_header Host \$http_host;
      proxy_set_header X-Forwarded-For \$proxy_add_x_forwarded_for;
      proxy_set_header X-Forwarded-Proto https;
      proxy_set_header X-Real-IP \$remote_addr;
      proxy_set_header X-Mlgraph-Proxy "$(cat "$SECRETS/proxy.key")";
      proxy_read_timeout 600s;
      proxy_request_buffering off;
    }
  }
}
NGINXEOF
  )
  mv "$TLS/nginx.conf.new" "$TLS/nginx.conf"
  if alive "$TLS/nginx.pid"; then
    nginx -s reload -c "$TLS/nginx.conf" -p "$TLS" || die "nginx did not reload $TLS/nginx.conf (see $TLS/error.log)"
  else
    nginx -c "$TLS/nginx.conf" -p "$TLS" || die "nginx did not start (see $TLS/error.log)"
  fi
  tls_health() { "$PYTHON" -c "import ssl, urllib.request as u; u.urlopen('https://$HOST:$MLGRAPH_SERVER_TLS_PORT/health', timeout=5, context=ssl.create_default_context(cafile='$TLS/cert.pem')).read()"; }
  wait_for 30 "nginx at https://$HOST:$MLGRAPH_SERVER_TLS_PORT (see $TLS/error.log)" tls_health
  say "https://$HOST:$MLGRAPH_SERVER_TLS_PORT: TLS through nginx; clients set MLFLOW_TRACKING_SERVER_CERT_PATH=$TLS/cert.pem"
fi
say "MLflow server up at $URI with members only (basic-auth), PostgreSQL on 127.0.0.1:$PG_PORT, artifacts in $ML_DIR/artifacts"
say "failed logins: $LOGIN_BURST per client address, then one every ${LOGIN_INTERVAL}s (429 in between)"
say "admin: MLFLOW_TRACKING_USERNAME=admin MLFLOW_TRACKING_PASSWORD=\$(cat $SECRETS/admin.pass); add members with scripts/server-user.sh"
say "use: python -m run tracking=server tracking.uri=$URI ...  (or MLFLOW_TRACKING_URI=$URI)"
