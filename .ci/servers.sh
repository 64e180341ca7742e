# Servers the tests use, on loopback, started for one run and stopped when
# it exits. Sourced by .ci/run and scripts/with-servers; needs root (or the
# packages already installed) to install them.
#
#   start_redis     installs redis-server (Debian) if missing, starts it
#                   with persistence off, exports FUSE_TEST_REDIS_URL.
#   start_postgres  starts PostgreSQL 15 (on the image, or installed from
#                   Debian) in a fresh cluster with fsync off, creates the
#                   database `fuse`, exports FUSE_TEST_DATABASE_URL.
#   find_chromium   installs Chromium (Debian) if missing, exports
#                   FUSE_TEST_CHROMIUM (the browser test starts its own
#                   headless instance).

SERVERS_DIR="$(mktemp -d /tmp/fuse-servers.XXXXXX)"
SERVER_STOPS=()

stop_servers() {
  local stop
  for stop in "${SERVER_STOPS[@]}"; do
    eval "$stop" || true
  done
  rm -rf "$SERVERS_DIR"
}
trap stop_servers EXIT

# A TCP port nothing listens on.
free_port() {
  python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()'
}

# apt-get install, with an index update if the first try finds nothing.
install_package() {
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q "$@" >/dev/null 2>&1 || {
    apt-get update -q >/dev/null
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q "$@" >/dev/null
  }
}

start_redis() {
  command -v redis-server >/dev/null || install_package redis-server
  local dir="$SERVERS_DIR/redis" port
  port="$(free_port)"
  mkdir -p "$dir"
  redis-server --bind 127.0.0.1 --port "$port" --save '' --appendonly no \
    --daemonize yes --pidfile "$dir/redis.pid" --logfile "$dir/redis.log" --dir "$dir"
  SERVER_STOPS+=("kill \$(cat '$dir/redis.pid') 2>/dev/null")
  local tries=0
  until redis-cli -p "$port" ping >/dev/null 2>&1; do
    tries=$((tries + 1))
    if [ "$tries" -gt 50 ]; then
      echo "redis-server did not answer on port $port:" >&2
      cat "$dir/redis.log" >&2
      return 1
    fi
    sleep 0.1
  done
  export FUSE_TEST_REDIS_URL="redis://127.0.0.1:$port"
  echo "redis-server $(redis-server --version | sed 's/.*v=\([^ ]*\).*/\1/') on $FUSE_TEST_REDIS_URL"
}

start_postgres() {
  local bin=/usr/lib/postgresql/15/bin
  [ -x "$bin/initdb" ] || install_package postgresql-15
  local dir="$SERVERS_DIR/postgres" port
  port="$(free_port)"
  mkdir -p "$dir/data"
  chmod a+x "$SERVERS_DIR"
  chown -R postgres "$dir"
  chmod 700 "$dir/data"
  runuser -u postgres -- "$bin/initdb" -D "$dir/data" -U postgres --auth=trust -E UTF8 \
    --no-sync >"$dir/initdb.log" 2>&1 || {
    cat "$dir/initdb.log" >&2
    return 1
  }
  runuser -u postgres -- "$bin/pg_ctl" -D "$dir/data" -l "$dir/pg.log" -w \
    -o "-c listen_addresses=127.0.0.1 -p $port -k $dir -c fsync=off -c max_connections=200" \
    start >/dev/null || {
    cat "$dir/pg.log" >&2
    return 1
  }
  SERVER_STOPS+=("runuser -u postgres -- '$bin/pg_ctl' -D '$dir/data' -m immediate stop >/dev/null 2>&1")
  runuser -u postgres -- psql -h 127.0.0.1 -p "$port" -U postgres -q -c 'CREATE DATABASE fuse' >/dev/null
  export FUSE_TEST_DATABASE_URL="postgres://postgres@127.0.0.1:$port/fuse"
  echo "PostgreSQL $("$bin/postgres" --version | awk '{print $3}') on $FUSE_TEST_DATABASE_URL"
}

find_chromium() {
  local bin
  bin="$(command -v chromium || command -v chromium-browser || true)"
  if [ -z "$bin" ]; then
    install_package chromium
    bin="$(command -v chromium)"
  fi
  export FUSE_TEST_CHROMIUM="$bin"
  echo "$("$bin" --version 2>/dev/null) at $FUSE_TEST_CHROMIUM"
}
