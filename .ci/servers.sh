# Servers the tests use, on loopback, started for one run and stopped when
# it exits. Sourced by .ci/run and scripts/with-servers; needs root (or the
# packages already installed) to install them.
#
#   start_redis     installs redis-server (Debian) if missing, starts it
#                   with persistence off, exports FUSE_TEST_REDIS_URL.
#   start_postgres  starts PostgreSQL 15 (on the image, or installed from
#                   Debian) in a fresh cluster with fsync off, creates the
#                   database `fuse`, exports FUSE_TEST_DATABASE_URL.
#   start_redis_cluster
#                   six redis-servers in cluster mode (three primaries,
#                   three replicas, a 2 s node timeout), exports
#                   FUSE_TEST_REDIS_CLUSTER_URL (redis+cluster://...) and
#                   FUSE_TEST_REDIS_CLUSTER_DIR (each node's pid file is
#                   DIR/PORT/pid, for the failover tests).
#   start_redis_sentinel
#                   a primary, its replica and three sentinels watching it
#                   (name `fuse`, down after 1 s), exports
#                   FUSE_TEST_REDIS_SENTINEL_URL (redis+sentinel://.../fuse).
#   find_chromium   installs Chromium (Debian) if missing, exports
#                   FUSE_TEST_CHROMIUM (the browser test starts its own
#                   headless instance).
#   find_php        installs PHP's command line and its Redis, PostgreSQL
#                   and SQLite extensions (Debian) if missing, exports
#                   FUSE_TEST_PHP (the interop tests run tests/php/milon.php
#                   with it, milon/fuse's side of a shared circuit).
#   start_prometheus
#                   installs prometheus (Debian) if missing, without
#                   starting the packaged service, and runs a server of its
#                   own that scrapes, every second, the targets listed in
#                   DIR/targets/*.json (file_sd, read every second);
#                   exports FUSE_TEST_PROMETHEUS_URL (http://127.0.0.1:PORT)
#                   and FUSE_TEST_PROMETHEUS_TARGETS (DIR/targets: a test
#                   adds a target by writing a file there).

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

# A TCP port for a cluster node: it and its cluster bus port (10000
# higher) free, below 55536.
free_cluster_port() {
  python3 -c '
import random, socket
while True:
    port = random.randint(20000, 45000)
    try:
        for p in (port, port + 10000):
            s = socket.socket(); s.bind(("127.0.0.1", p)); s.close()
    except OSError:
        continue
    print(port)
    break'
}

# apt-get install, with an index update if the first try finds nothing.
install_package() {
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q "$@" >/dev/null 2>&1 || {
    apt-get update -q >/dev/null
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q "$@" >/dev/null
  }
}

# Waits until redis-server on port $1 answers PING (its log is $2).
await_redis() {
  local tries=0
  until redis-cli -p "$1" ping >/dev/null 2>&1; do
    tries=$((tries + 1))
    if [ "$tries" -gt 50 ]; then
      echo "redis-server did not answer on port $1:" >&2
      cat "$2" >&2
      return 1
    fi
    sleep 0.1
  done
}

start_redis() {
  command -v redis-server >/dev/null || install_package redis-server
  local dir="$SERVERS_DIR/redis" port
  port="$(free_port)"
  mkdir -p "$dir"
  redis-server --bind 127.0.0.1 --port "$port" --save '' --appendonly no \
    --daemonize yes --pidfile "$dir/redis.pid" --logfile "$dir/redis.log" --dir "$dir"
  SERVER_STOPS+=("kill \$(cat '$dir/redis.pid') 2>/dev/null")
  await_redis "$port" "$dir/redis.log" || return 1
  export FUSE_TEST_REDIS_URL="redis://127.0.0.1:$port"
  echo "redis-server $(redis-server --version | sed 's/.*v=\([^ ]*\).*/\1/') on $FUSE_TEST_REDIS_URL"
}

start_redis_cluster() {
  command -v redis-server >/dev/null || install_package redis-server
  local base="$SERVERS_DIR/cluster" port ports=() nodes=() i
  for i in 1 2 3 4 5 6; do
    port="$(free_cluster_port)"
    mkdir -p "$base/$port"
    redis-server --bind 127.0.0.1 --port "$port" --cluster-enabled yes \
      --cluster-config-file "$base/$port/nodes.conf" --cluster-node-timeout 2000 \
      --save '' --appendonly no --daemonize yes --pidfile "$base/$port/pid" \
      --logfile "$base/$port/log" --dir "$base/$port"
    SERVER_STOPS+=("kill \$(cat '$base/$port/pid') 2>/dev/null")
    ports+=("$port")
    nodes+=("127.0.0.1:$port")
  done
  for port in "${ports[@]}"; do
    await_redis "$port" "$base/$port/log" || return 1
  done
  redis-cli --cluster create "${nodes[@]}" --cluster-replicas 1 --cluster-yes \
    >"$base/create.log" 2>&1 || {
    cat "$base/create.log" >&2
    return 1
  }
  local tries=0
  for port in "${ports[@]}"; do
    until redis-cli -p "$port" cluster info 2>/dev/null | grep -q 'cluster_state:ok'; do
      tries=$((tries + 1))
      if [ "$tries" -gt 200 ]; then
        echo "the Redis cluster did not become ok on port $port:" >&2
        redis-cli -p "$port" cluster info >&2
        return 1
      fi
      sleep 0.1
    done
  done
  export FUSE_TEST_REDIS_CLUSTER_URL
  FUSE_TEST_REDIS_CLUSTER_URL="redis+cluster://$(IFS=,; echo "${nodes[*]}")"
  export FUSE_TEST_REDIS_CLUSTER_DIR="$base"
  echo "Redis Cluster (3 primaries, 3 replicas) on $FUSE_TEST_REDIS_CLUSTER_URL"
}

start_redis_sentinel() {
  command -v redis-server >/dev/null || install_package redis-server
  local base="$SERVERS_DIR/sentinel" primary replica port sentinels=() i
  primary="$(free_port)"
  replica="$(free_port)"
  for port in "$primary" "$replica"; do
    mkdir -p "$base/$port"
    local follow=()
    [ "$port" = "$replica" ] && follow=(--replicaof 127.0.0.1 "$primary")
    redis-server --bind 127.0.0.1 --port "$port" --save '' --appendonly no \
      --daemonize yes --pidfile "$base/$port/pid" --logfile "$base/$port/log" \
      --dir "$base/$port" "${follow[@]}"
    SERVER_STOPS+=("kill \$(cat '$base/$port/pid') 2>/dev/null")
    await_redis "$port" "$base/$port/log" || return 1
  done
  for i in 1 2 3; do
    port="$(free_port)"
    mkdir -p "$base/s$port"
    printf '%s\n' "port $port" "bind 127.0.0.1" "daemonize yes" \
      "pidfile $base/s$port/pid" "logfile $base/s$port/log" "dir $base/s$port" \
      "sentinel monitor fuse 127.0.0.1 $primary 1" \
      "sentinel down-after-milliseconds fuse 1000" \
      "sentinel failover-timeout fuse 5000" >"$base/s$port/sentinel.conf"
    redis-server "$base/s$port/sentinel.conf" --sentinel
    SERVER_STOPS+=("kill \$(cat '$base/s$port/pid') 2>/dev/null")
    await_redis "$port" "$base/s$port/log" || return 1
    sentinels+=("127.0.0.1:$port")
  done
  local tries=0
  until redis-cli -p "$primary" info replication | grep -q 'slave0:.*state=online'; do
    tries=$((tries + 1))
    if [ "$tries" -gt 100 ]; then
      echo "the replica did not come online:" >&2
      cat "$base/$replica/log" >&2
      return 1
    fi
    sleep 0.1
  done
  export FUSE_TEST_REDIS_SENTINEL_URL
  FUSE_TEST_REDIS_SENTINEL_URL="redis+sentinel://$(IFS=,; echo "${sentinels[*]}")/fuse"
  echo "Redis Sentinel (a primary, a replica, 3 sentinels) on $FUSE_TEST_REDIS_SENTINEL_URL"
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

# PHP with the extensions milon/fuse's stores use: phpredis (Laravel's
# cache, a JSON key), pdo_pgsql and pdo_sqlite (its DatabaseStore).
find_php() {
  local extensions=(redis pdo_pgsql pdo_sqlite) missing=0 extension
  if command -v php >/dev/null; then
    for extension in "${extensions[@]}"; do
      php -r "exit(extension_loaded('$extension') ? 0 : 1);" || missing=1
    done
  else
    missing=1
  fi
  [ "$missing" = 0 ] || install_package php-cli php-redis php-pgsql php-sqlite3
  for extension in "${extensions[@]}"; do
    php -r "exit(extension_loaded('$extension') ? 0 : 1);" || {
      echo "PHP has no $extension extension after installing it" >&2
      return 1
    }
  done
  export FUSE_TEST_PHP
  FUSE_TEST_PHP="$(command -v php)"
  echo "$(php -r 'echo "PHP ", PHP_VERSION, " (redis ", phpversion("redis"), ")";') at $FUSE_TEST_PHP"
}

# Prometheus, for the dashboards' queries (tests/prometheus.rs): a server
# of our own on a free loopback port, its data in the servers' directory.
start_prometheus() {
  if [ ! -x /usr/bin/prometheus ]; then
    # The package's postinst starts its service, and its recommends bring
    # the node exporter: install it alone, with services kept from
    # starting while it installs (policy-rc.d), and stop the service if
    # one started all the same.
    local policy=/usr/sbin/policy-rc.d ours=0
    if [ ! -e "$policy" ]; then
      printf '#!/bin/sh\nexit 101\n' >"$policy"
      chmod +x "$policy"
      ours=1
    fi
    install_package --no-install-recommends prometheus || {
      [ "$ours" = 0 ] || rm -f "$policy"
      return 1
    }
    [ "$ours" = 0 ] || rm -f "$policy"
    if [ -x /etc/init.d/prometheus ]; then
      /etc/init.d/prometheus stop >/dev/null 2>&1 || true
    fi
    if command -v systemctl >/dev/null && [ -d /run/systemd/system ]; then
      systemctl stop prometheus >/dev/null 2>&1 || true
    fi
  fi
  local dir="$SERVERS_DIR/prometheus" port pid tries=0
  port="$(free_port)"
  mkdir -p "$dir/data" "$dir/targets"
  printf '%s\n' \
    "global:" \
    "  scrape_interval: 1s" \
    "  scrape_timeout: 1s" \
    "  evaluation_interval: 1s" \
    "scrape_configs:" \
    "  - job_name: fuse-tests" \
    "    file_sd_configs:" \
    "      - files: ['$dir/targets/*.json']" \
    "        refresh_interval: 1s" >"$dir/prometheus.yml"
  /usr/bin/prometheus --config.file="$dir/prometheus.yml" \
    --storage.tsdb.path="$dir/data" --storage.tsdb.retention.time=1d \
    --web.listen-address="127.0.0.1:$port" >"$dir/prometheus.log" 2>&1 &
  pid=$!
  SERVER_STOPS+=("kill $pid 2>/dev/null; wait $pid 2>/dev/null")
  until curl -fsS "http://127.0.0.1:$port/-/ready" >/dev/null 2>&1; do
    tries=$((tries + 1))
    if [ "$tries" -gt 100 ] || ! kill -0 "$pid" 2>/dev/null; then
      echo "prometheus did not become ready on port $port:" >&2
      cat "$dir/prometheus.log" >&2
      return 1
    fi
    sleep 0.1
  done
  export FUSE_TEST_PROMETHEUS_URL="http://127.0.0.1:$port"
  export FUSE_TEST_PROMETHEUS_TARGETS="$dir/targets"
  echo "Prometheus $(/usr/bin/prometheus --version 2>&1 | awk 'NR == 1 {print $3}') on $FUSE_TEST_PROMETHEUS_URL"
}
