# Sourced by bench/fleet and bench/schedules: one PostgreSQL 15 of their own (initdb into a temp
# dir, loopback port, pg_stat_statements and statement logging), and the exit trap that takes it
# and every JVM the harness started down. The caller sets NAME (for messages) and KEEP (1: keep
# the temp dir), then calls pg15_start; afterwards TMP, PORT, PIDS and PGBIN are set, and the
# harness JVM runs through pg15_run.
PGBIN=${PGBIN:-/usr/lib/postgresql/15/bin}
[ -x "$PGBIN/postgres" ] || { echo "$NAME: no PostgreSQL 15 in $PGBIN (apt-get install postgresql-15, or set PGBIN)" >&2; exit 1; }

pg15_log() { printf '[%s %s] %s\n' "$NAME" "$(date +%H:%M:%S)" "$*" >&2; }

pg15_cleanup() {
  set +e
  if [ -n "${JAVA_PID:-}" ] && kill -0 "$JAVA_PID" 2>/dev/null; then kill "$JAVA_PID"; sleep 3; kill -9 "$JAVA_PID" 2>/dev/null; fi
  if [ -f "$PIDS" ]; then
    while read -r p; do kill -9 "$p" 2>/dev/null; done <"$PIDS"
  fi
  [ -f "$TMP/data/postmaster.pid" ] && "${AS[@]}" "$PGBIN/pg_ctl" -D "$TMP/data" -m immediate -w stop >/dev/null 2>&1
  if [ "$KEEP" = 1 ]; then pg15_log "kept $TMP"; else rm -rf "$TMP"; fi
}

pg15_start() {
  # PostgreSQL refuses to run as root: then the server runs as the postgres user.
  AS=()
  TMP=$(mktemp -d "/tmp/outrun-$NAME.XXXXXX")
  if [ "$(id -u)" = 0 ]; then
    id postgres >/dev/null 2>&1 || { echo "$NAME: running as root needs a 'postgres' user for the server" >&2; exit 1; }
    chown postgres "$TMP"
    AS=(runuser -u postgres --)
  fi
  PIDS="$TMP/child-pids"     # the harness writes the pid of every JVM it starts here
  JAVA_PID=
  trap pg15_cleanup EXIT
  trap 'exit 130' INT TERM

  PORT=${FLEET_PG_PORT:-}
  if [ -z "$PORT" ]; then
    for _ in $(seq 1 50); do
      PORT=$((20000 + RANDOM % 20000))
      (exec 3<>"/dev/tcp/127.0.0.1/$PORT") 2>/dev/null || break
    done
  fi
  pg15_log "PostgreSQL 15 in $TMP (port $PORT, statement log $TMP/server.log)"
  "${AS[@]}" "$PGBIN/initdb" -D "$TMP/data" -U postgres --auth=trust -E UTF8 --no-locale >"$TMP/initdb.log" 2>&1 \
    || { cat "$TMP/initdb.log"; exit 1; }
  # Durable (fsync, synchronous_commit on) as in production. No checkpoint during the run, so the
  # WAL figures do not depend on where a checkpoint fell (they exclude full-page images).
  # No autovacuum: the harness runs VACUUM (ANALYZE) before each window, so WAL in a window is the nodes'.
  cat >>"$TMP/data/postgresql.conf" <<EOF
port = $PORT
listen_addresses = '127.0.0.1'
unix_socket_directories = '$TMP'
max_connections = 250
shared_buffers = 1GB
shared_preload_libraries = 'pg_stat_statements'
pg_stat_statements.max = 10000
track_io_timing = on
fsync = on
synchronous_commit = on
checkpoint_timeout = 1d
max_wal_size = 32GB
autovacuum = off
log_statement = 'all'
log_line_prefix = '%m|%u|%a|%p|%x| '
EOF
  "${AS[@]}" "$PGBIN/pg_ctl" -D "$TMP/data" -l "$TMP/server.log" -w -t 60 start >/dev/null
}

# Runs the harness class $1 (the rest: its arguments) against the server, killable by the trap.
pg15_run() {
  local main=$1
  shift
  java -Xmx512m -Dlogback.configurationFile=bench/logback.xml -cp "$OUT/classes:$JAR" "$main" \
    --jar "$JAR" --out "$OUT" --pg-url "jdbc:postgresql://127.0.0.1:$PORT/" --pg-log "$TMP/server.log" \
    --pids "$PIDS" "$@" &
  JAVA_PID=$!
  set +e
  wait "$JAVA_PID"
  local rc=$?
  JAVA_PID=
  return $rc
}

# Builds the fat jar unless told not to (BUILD=0 and it exists), and compiles bench/ against it.
pg15_compile() {
  JAR=worker/target/outrun.jar
  if [ "$BUILD" = 1 ] || [ ! -f "$JAR" ]; then
    pg15_log "building $JAR (./mvnw -DskipTests package -pl worker -am)"
    ./mvnw -q -B -ntp -DskipTests package -pl worker -am
  fi
  pg15_log "compiling bench/ against $JAR"
  rm -rf "$OUT/classes" && mkdir -p "$OUT/classes"
  javac -nowarn -d "$OUT/classes" -cp "$JAR" bench/src/*.java bench/docker-overhead/DockerOverhead.java
}
