#!/usr/bin/env bash
# bench/scale.sh -- the store at scale: admin create rates at 1k, 10k and 100k existing
# entries for the file store and PostgreSQL, start-up time and memory with 100k
# sessions, and how long one change takes to reach a second replica (PostgreSQL,
# 10k services and 100k sessions). Prints one line per measurement.
#
# Each store is written with bench/seed_store.cpp (built here against build/'s
# libraries) and, for PostgreSQL, copied in with `vaultgate store migrate`. PostgreSQL 15
# is started here: initdb in the scratch directory (as `nobody` when run as root),
# listening on 127.0.0.1 on a port picked at run time, password through PGPASSFILE.
# Every wait is bounded; everything started is stopped on exit.
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/.." && pwd)

usage() {
  cat <<'U'
usage: bench/scale.sh [--build-dir DIR] [--vaultgate BIN] [--sizes "1000 10000 100000"]
                      [--creates N] [--backends "file pg"] [--propagation N] [--snapshot INTERVAL] [--settle S] [--keep]
  --build-dir DIR  a built tree (default build/): its vaultgate and static libraries
  --vaultgate BIN  measure this binary instead of DIR/vaultgate (e.g. an older build;
                   the stores are written in the snapshot format every version reads)
  --sizes          existing sessions and services before the creates (default 1000 10000 100000)
  --creates N      sessions, then services, created per size (default 200)
  --backends       file, pg or both (default both)
  --propagation N  changes timed from replica A to replica B (default 50; 0 skips)
  --snapshot INTERVAL  PostgreSQL replicas keep a local snapshot (store.snapshot_path)
                   written at most once per INTERVAL (store.snapshot_interval: 10s is the
                   default, 1ms copies the data at every change), and one start from it
                   is timed at the largest size with the database down
  --settle S       seconds to wait after the creates before reading the RSS (default 0)
  --keep           keep the scratch directory
U
  exit 2
}

BUILD="$ROOT/build" VG="" SIZES="1000 10000 100000" CREATES=200 BACKENDS="file pg" PROP=50 KEEP=0 SNAPSHOT= SETTLE=0
while [ $# -gt 0 ]; do
  case $1 in
    --build-dir) BUILD=$2; shift;; --vaultgate) VG=$2; shift;; --sizes) SIZES=$2; shift;; --creates) CREATES=$2; shift;;
    --backends) BACKENDS=$2; shift;; --propagation) PROP=$2; shift;; --keep) KEEP=1;; --snapshot) SNAPSHOT=$2; shift;;
    --settle) SETTLE=$2; shift;;
    -h|--help) usage;; *) echo "unknown argument: $1" >&2; usage;;
  esac
  shift
done
VG=${VG:-$BUILD/vaultgate}
[ -x "$VG" ] || { echo "no $VG: build it first (ninja -C $BUILD vaultgate)" >&2; exit 1; }
PG_BIN=/usr/lib/postgresql/15/bin

WORK=$(mktemp -d /tmp/vaultgate-scale.XXXXXX)
chmod 755 "$WORK"
PIDS=()
PG_DATA=""
cleanup() {
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null || true; done
  if [ -n "$PG_DATA" ]; then as_pg "$PG_BIN/pg_ctl" -D "$PG_DATA" -m immediate -w stop >/dev/null 2>&1 || true; fi
  if [ "$KEEP" = 1 ]; then echo "kept $WORK"; else rm -rf "$WORK"; fi
}
trap cleanup EXIT

as_pg() { if [ "$(id -u)" = 0 ]; then runuser -u nobody -- "$@"; else "$@"; fi; }
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
now_ms() { date +%s%3N; }

# ---- tools, keys, PKI
echo "building bench/seed_store.cpp" >&2
L="$BUILD"
g++ -std=c++20 -O2 -DNDEBUG -I"$ROOT/include" -I"$ROOT/src" "$HERE/seed_store.cpp" \
  -Wl,--start-group "$L"/libvaultgate_{vault,state,config,credentials,signing,minting,http,egress,crypto,observe,util}.a \
  -Wl,--end-group -lyaml-cpp -lpsl -lidn2 -lssl -lcrypto -lpthread -o "$WORK/seed_store"
"$HERE/pki.sh" "$WORK/pki" >/dev/null
(umask 077 && head -c 32 /dev/urandom > "$WORK/master.key")
TOKEN=$(head -c 24 /dev/urandom | base64 | tr -d '/+=\n')
(umask 077 && printf '%s\n' "$TOKEN" > "$WORK/admin.token")

# ---- PostgreSQL
PG_URL_BASE=""
start_pg() {
  local dir="$WORK/pg" password
  mkdir -p "$dir"
  password=$(head -c 18 /dev/urandom | base64 | tr -d '/+=\n')
  printf '%s\n' "$password" > "$dir/password"
  [ "$(id -u)" = 0 ] && chown -R nobody "$dir"
  PG_DATA="$dir/data"
  as_pg "$PG_BIN/initdb" -D "$PG_DATA" -U vaultgate --pwfile="$dir/password" --auth=scram-sha-256 \
    -E UTF8 --no-instructions >"$WORK/initdb.log" 2>&1
  PG_PORT=$(free_port)
  PG_SOCKETS=$dir
  pg_ctl_start
  (umask 077 && printf '127.0.0.1:%s:*:vaultgate:%s\n' "$PG_PORT" "$password" > "$WORK/pgpass")
  export PGPASSFILE="$WORK/pgpass"
  PG_URL_BASE="postgresql://vaultgate@127.0.0.1:$PG_PORT"
}
pg_ctl_start() {
  as_pg "$PG_BIN/pg_ctl" -D "$PG_DATA" -l "$PG_SOCKETS/server.log" -w -t 60 \
    -o "-p $PG_PORT -c listen_addresses=127.0.0.1 -k $PG_SOCKETS -c max_connections=50" start >/dev/null
}
psql_do() { "$PG_BIN/psql" -X -q -A -t -d "$PG_URL_BASE/postgres" -c "$1"; }

# ---- one vaultgate
write_config() {  # write_config FILE STORE_LINE
  cat > "$1" <<EOF
listen:
  proxy: 127.0.0.1:0
  admin: 127.0.0.1:0
ca:
  cert: $WORK/pki/proxy-ca.crt
  key: $WORK/pki/proxy-ca.key
store:
  $2
  master_key_file: $WORK/master.key
admin:
  token_file: $WORK/admin.token
log:
  access: $WORK/access.log
  level: info
EOF
}

# start_vg CONFIG LOG: sets VG_PID, ADMIN_PORT, START_MS (launch to listening line).
start_vg() {
  local t0 line i
  t0=$(now_ms)
  "$VG" serve --config "$1" 2>"$2" >/dev/null &
  VG_PID=$!
  PIDS+=("$VG_PID")
  for i in $(seq 1 1200); do  # 120 s at most
    line=$(grep -m1 'vaultgate listening: proxy ' "$2" || true)
    [ -n "$line" ] && break
    kill -0 "$VG_PID" 2>/dev/null || { echo "vaultgate exited:" >&2; cat "$2" >&2; exit 1; }
    sleep 0.1
  done
  [ -n "$line" ] || { echo "vaultgate did not start within 120 s" >&2; exit 1; }
  START_MS=$(( $(now_ms) - t0 ))
  ADMIN_PORT=$(sed -E 's/.* admin [^ ]*:([0-9]+).*/\1/' <<<"$line")
}
stop_vg() {
  kill "$1" 2>/dev/null || true
  wait "$1" 2>/dev/null || true
}
rss_kib() { awk '/^VmRSS/ {print $2}' "/proc/$1/status"; }

# seed BACKEND NAME SESSIONS SERVICES: writes the store, echoes the config's store line.
seed() {
  local file="$WORK/$2.db"
  rm -f "$file" "$file".*
  "$WORK/seed_store" "$file" "$WORK/master.key" "$3" "$4" >&2
  if [ "$1" = file ]; then
    echo "path: $file"
  else
    psql_do "DROP DATABASE IF EXISTS $2" >/dev/null
    psql_do "CREATE DATABASE $2" >/dev/null
    "$VG" store migrate --from "$file" --to "$PG_URL_BASE/$2" --master-key-file "$WORK/master.key" >&2
    if [ -n "$SNAPSHOT" ]; then
      rm -f "$WORK/$2.snapshot" "$WORK/$2.snapshot".*
      printf 'url: %s\n  snapshot_path: %s\n  snapshot_interval: %s\n' "$PG_URL_BASE/$2" "$WORK/$2.snapshot" "$SNAPSHOT"
    else
      echo "url: $PG_URL_BASE/$2"
    fi
  fi
}

case " $BACKENDS " in *" pg "*) start_pg;; esac
echo "# $(date -u +%FT%TZ) $(nproc) cores; $(uptime | sed 's/.*load/load/')"

# ---- create rates
for backend in $BACKENDS; do
  for n in $SIZES; do
    name="s_${backend}_$n"
    store_line=$(seed "$backend" "$name" "$n" "$n")
    write_config "$WORK/$name.yaml" "$store_line"
    start_vg "$WORK/$name.yaml" "$WORK/$name.log"
    echo "{\"backend\":\"$backend\",\"existing\":$n,\"kind\":\"start\",\"ms\":$START_MS,\"rss_kib\":$(rss_kib "$VG_PID")}"
    python3 "$HERE/scale_client.py" creates "$ADMIN_PORT" "$TOKEN" "$CREATES" vlt_bench0 |
      sed "s/^{/{\"backend\":\"$backend\",\"existing\":$n,/"
    sleep "$SETTLE"
    echo "{\"backend\":\"$backend\",\"existing\":$n,\"kind\":\"after_creates\",\"rss_kib\":$(rss_kib "$VG_PID")}"
    stop_vg "$VG_PID"
  done
done

# ---- a start from the local snapshot, the database stopped, at the largest size
if [[ " $BACKENDS " == *" pg "* ]] && [ -n "$SNAPSHOT" ]; then
  n=${SIZES##* }
  name="s_pg_$n"
  as_pg "$PG_BIN/pg_ctl" -D "$PG_DATA" -w -t 60 -m fast stop >/dev/null
  start_vg "$WORK/$name.yaml" "$WORK/$name-from-snapshot.log"
  echo "{\"backend\":\"pg\",\"existing\":$n,\"kind\":\"start_from_snapshot\",\"ms\":$START_MS,\"rss_kib\":$(rss_kib "$VG_PID"),\"snapshot_bytes\":$(stat -c %s "$WORK/$name.snapshot")}"
  stop_vg "$VG_PID"
  pg_ctl_start
fi

# ---- start-up and memory per session: 100k sessions against none (file store)
if [[ " $BACKENDS " == *" file "* ]]; then
  for n in 0 100000; do
    name="m_$n"
    store_line=$(seed file "$name" "$n" 0)
    write_config "$WORK/$name.yaml" "$store_line"
    start_vg "$WORK/$name.yaml" "$WORK/$name.log"
    rss=$(rss_kib "$VG_PID")
    echo "{\"backend\":\"file\",\"sessions\":$n,\"kind\":\"start\",\"ms\":$START_MS,\"rss_kib\":$rss}"
    [ "$n" = 0 ] && base_rss=$rss
    [ "$n" != 0 ] && echo "{\"kind\":\"memory_per_session\",\"bytes\":$(( (rss - base_rss) * 1024 / n ))}"
    stop_vg "$VG_PID"
  done
fi

# ---- propagation: two replicas on one database, 10k services and 100k sessions
if [[ " $BACKENDS " == *" pg "* ]] && [ "$PROP" -gt 0 ]; then
  store_line=$(seed pg prop 100000 10000)
  write_config "$WORK/prop.yaml" "$store_line"
  start_vg "$WORK/prop.yaml" "$WORK/prop-a.log"; A_PID=$VG_PID A_PORT=$ADMIN_PORT
  echo "{\"backend\":\"pg\",\"sessions\":100000,\"services\":10000,\"kind\":\"start\",\"ms\":$START_MS,\"rss_kib\":$(rss_kib "$A_PID")}"
  start_vg "$WORK/prop.yaml" "$WORK/prop-b.log"; B_PID=$VG_PID B_PORT=$ADMIN_PORT
  python3 "$HERE/scale_client.py" propagation "$A_PORT" "$B_PORT" "$TOKEN" "$PROP" |
    sed 's/^{/{"backend":"pg","sessions":100000,"services":10000,/'
  stop_vg "$A_PID"; stop_vg "$B_PID"
fi
