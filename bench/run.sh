#!/usr/bin/env bash
# bench/run.sh -- vaultgate's benchmark, one command (run as root for the Squid/mitmproxy part).
#
# Builds a release vaultgate, generates a test PKI (bench/pki.sh), starts nginx as the TLS
# upstream and vaultgate (api.bench.test bound with x-api-key injection, names pinned with
# upstream.resolve), checks that injection is correct, then runs bench/loadgen.c against
# vaultgate and straight against nginx (the baseline) and prints requests/s, p50/p99,
# MB/s, proxy CPU per request and RSS per idle MITM'd connection (bench/report.py).
# When the shared peers harness (../shared/peers) and Squid or mitmproxy are installed,
# it then runs vaultgate, Squid and mitmproxy side by side in that harness too.
#
# Everything listens on 127.0.0.1/127.0.0.2; every load run has a fixed duration or
# request count; everything started here is killed on exit.
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/.." && pwd)

usage() {
  cat <<'U'
usage: bench/run.sh [--duration S] [--runs N] [--scenarios ka,fresh,bytes,idle]
                    [--idle-conns N] [--auth TYPE] [--vaultgate BIN] [--build-dir DIR]
                    [--peers auto|yes|no] [--peers-dir DIR] [--profile] [--out DIR] [--keep]
  --duration S   seconds per load run (default 10)
  --runs N       runs per scenario; the tables show medians (default 3)
  --scenarios    ka = 32 keep-alive connections, small GETs
                 fresh = 8 concurrent, new CONNECT + full TLS handshake per request
                 bytes = 1 MiB downloads over 8 keep-alive connections
                 idle = fresh proxy, N connections MITM'd, one request each, held 5 s
  --idle-conns N connections held in `idle` (default 1000)
  --auth TYPE    the bound service's auth: api-key (default), bearer, aws-sigv4 or
                 oauth2-client-credentials (its token endpoint is nginx on the other host)
  --vaultgate B  use this binary instead of building build-release/vaultgate
  --peers        auto (default): run the shared harness with Squid/mitmproxy when it and
                 one of them are installed and we are root; yes: require it; no: skip
  --profile      after the measured runs, one more run per scenario with `perf record`
                 (cpu-clock samples of vaultgate) and its top functions; not in the tables
  --out DIR      keep the JSON results in DIR (default: a new /tmp/vaultgate-bench-results.*)
  --keep         keep the scratch dir (configs, logs)
U
  exit 2
}

DUR=10 RUNS=3 SCEN=ka,fresh,bytes,idle IDLE=1000 VG="" BUILD="$ROOT/build-release"
PEERS=auto PEERS_DIR="$ROOT/../shared/peers" OUT="" KEEP=0 PROFILE=0 AUTH=api-key
while [ $# -gt 0 ]; do
  case $1 in
    --duration) DUR=$2; shift;; --runs) RUNS=$2; shift;; --scenarios) SCEN=$2; shift;;
    --idle-conns) IDLE=$2; shift;; --auth) AUTH=$2; shift;; --vaultgate) VG=$2; shift;; --build-dir) BUILD=$2; shift;;
    --peers) PEERS=$2; shift;; --peers-dir) PEERS_DIR=$2; shift;; --out) OUT=$2; shift;;
    --keep) KEEP=1;; --profile) PROFILE=1;; -h|--help) usage;; *) echo "unknown argument: $1" >&2; usage;;
  esac
  shift
done
case $PEERS in auto|yes|no) ;; *) usage;; esac
case $AUTH in api-key|bearer|aws-sigv4|oauth2-client-credentials) ;; *) usage;; esac
if [ "$AUTH" != api-key ]; then
  # The origin checks only x-api-key on its byte files, and the shared harness configures
  # its own service: both compare api-key alone.
  [[ ,$SCEN, == *,bytes,* ]] && { echo "--auth $AUTH: scenarios ka, fresh and idle only" >&2; exit 2; }
  PEERS=no
fi
[[ $DUR =~ ^[0-9]+$ && $DUR -ge 1 && $DUR -le 600 ]] || { echo "--duration: 1..600" >&2; exit 2; }
[[ $RUNS =~ ^[0-9]+$ && $RUNS -ge 1 && $RUNS -le 20 ]] || { echo "--runs: 1..20" >&2; exit 2; }
[[ $IDLE =~ ^[0-9]+$ && $IDLE -ge 1 && $IDLE -le 5000 ]] || { echo "--idle-conns: 1..5000" >&2; exit 2; }

BOUND=api.bench.test OTHER=other.bench.test SECRET=sk-bench-REAL-secret PLACEHOLDER=placeholder
KEY_ID=AKIDBENCHEXAMPLE MINTED=minted-bench-token
# Per auth type: the service's auth, the origin path that echoes what it got, the body
# it must answer, and the header the client (placeholder) and the direct baseline send.
case $AUTH in
  api-key) SERVICE_AUTH="{ type: api-key, header: x-api-key, key: BENCH_KEY }" ECHO_PATH=/echo
           WANT=$SECRET CLIENT_HDR="x-api-key: $PLACEHOLDER" DIRECT_HDR="x-api-key: $SECRET";;
  bearer)  SERVICE_AUTH="{ type: bearer, key: BENCH_KEY }" ECHO_PATH=/authorization
           WANT="Bearer $SECRET" CLIENT_HDR="authorization: Bearer $PLACEHOLDER"
           DIRECT_HDR="authorization: Bearer $SECRET";;
  oauth2-client-credentials)
           SERVICE_AUTH="{ type: oauth2-client-credentials, token_url: \"https://$OTHER:@UP@/token\", client_id: BENCH_ID, client_secret: BENCH_KEY }"
           ECHO_PATH=/authorization WANT="Bearer $MINTED" CLIENT_HDR="authorization: Bearer $PLACEHOLDER"
           DIRECT_HDR="authorization: Bearer $MINTED";;
  aws-sigv4)
           SERVICE_AUTH="{ type: aws-sigv4, access_key_id: BENCH_ID, secret_access_key: BENCH_KEY, region: us-east-1, service: bench }"
           ECHO_PATH=/sigv4 WANT=signed CLIENT_HDR="authorization: $PLACEHOLDER"
           DIRECT_HDR="authorization: AWS4-HMAC-SHA256 Credential=$KEY_ID/20260101/us-east-1/bench/aws4_request, SignedHeaders=host, Signature=$(printf '%064d' 0)";;
esac

need=()
for t in nginx openssl cc python3 curl ss; do command -v $t >/dev/null || need+=("$t"); done
[ -f /usr/include/x86_64-linux-gnu/curl/curl.h ] || [ -f /usr/include/curl/curl.h ] || need+=(libcurl-dev)
if [ ${#need[@]} -gt 0 ]; then
  echo "missing: ${need[*]}" >&2
  echo "install: apt-get install -y nginx libnginx-mod-http-echo libcurl4-openssl-dev curl iproute2 (and scripts/install-deps.sh)" >&2
  exit 1
fi

# --- build ------------------------------------------------------------------------------
if [ -z "$VG" ]; then
  "$ROOT/scripts/install-deps.sh"
  echo "building release vaultgate in $BUILD"
  cmake -S "$ROOT" -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release -DVAULTGATE_TESTS=OFF >/dev/null
  ninja -C "$BUILD" vaultgate >/dev/null
  VG=$BUILD/vaultgate
fi
[ -x "$VG" ] || { echo "no vaultgate binary at $VG" >&2; exit 1; }
VG=$(cd "$(dirname "$VG")" && pwd)/$(basename "$VG")

# --- scratch dir, cleanup ------------------------------------------------------------------
W=$(mktemp -d /tmp/vaultgate-bench.XXXXXX); chmod 755 "$W"
[ -n "$OUT" ] || OUT=$(mktemp -d /tmp/vaultgate-bench-results.XXXXXX)
mkdir -p "$OUT"; OUT=$(cd "$OUT" && pwd)
NGINX_PG="" VG_PG="" LG=""
stop_pg() {  # TERM the process group, wait up to 5 s, then KILL
  [ -n "$1" ] || return 0
  kill -TERM -- "-$1" 2>/dev/null || return 0
  for _ in $(seq 1 20); do kill -0 -- "-$1" 2>/dev/null || return 0; sleep 0.25; done
  kill -KILL -- "-$1" 2>/dev/null || true
}
cleanup() {
  set +e
  [ -n "$LG" ] && kill -TERM "$LG" 2>/dev/null
  stop_pg "$VG_PG"; stop_pg "$NGINX_PG"
  if [ $KEEP = 1 ]; then echo "kept $W"; else rm -rf "$W"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# Every held connection costs the proxy two descriptors (client and upstream).
want=$((2 * IDLE + 1024)); [ $want -lt 8192 ] && want=8192
hard=$(ulimit -Hn); [ "$hard" = unlimited ] && hard=$want
[ "$hard" -lt $want ] && want=$hard
ulimit -n "$want" 2>/dev/null || true
if [ "$(ulimit -n)" -lt $((2 * IDLE + 64)) ]; then
  echo "open-file limit $(ulimit -n) is too low for --idle-conns $IDLE" >&2; exit 1
fi

cc -O2 -o "$W/loadgen" "$HERE/loadgen.c" -lcurl
"$HERE/pki.sh" "$W"
read -r UP VP < <(python3 -c 'import socket
ss = [socket.socket() for _ in range(2)]
[s.bind(("127.0.0.1", 0)) for s in ss]; print(*[s.getsockname()[1] for s in ss])')

# --- nginx: TLS upstream on 127.0.0.1 and 127.0.0.2 --------------------------------------
mkdir -p "$W/www"; head -c 1048576 /dev/urandom > "$W/www/1048576"; chmod -R a+rX "$W/www"
ECHO_MOD=/usr/lib/nginx/modules/ngx_http_echo_module.so   # optional: raw header dump
cat > "$W/nginx.conf" <<EOF
$( [ -f $ECHO_MOD ] && echo "load_module $ECHO_MOD;" )
worker_processes 1;
worker_rlimit_nofile 16384;
pid $W/nginx.pid;
events { worker_connections 8192; }
http {
  # aws-sigv4: "signed" when the Authorization has the shape vaultgate signs with.
  map \$http_authorization \$sigv4_shape {
    "~^AWS4-HMAC-SHA256 Credential=$KEY_ID/[0-9]{8}/us-east-1/bench/aws4_request, SignedHeaders=[a-z0-9;-]+, Signature=[0-9a-f]{64}\$" signed;
    default unsigned;
  }
  access_log off; keepalive_timeout 300s; keepalive_requests 1000000; sendfile on;
  server {
    listen 127.0.0.1:$UP ssl; listen 127.0.0.2:$UP ssl;
    server_name $BOUND $OTHER;
    ssl_certificate $W/upstream.crt; ssl_certificate_key $W/upstream.key;
    default_type text/plain;
    location = /echo { return 200 "\$http_x_api_key\n"; }
    location = /authorization { return 200 "\$http_authorization\n"; }
    location = /sigv4 { return 200 "\$sigv4_shape\n"; }
    location = /token {
      default_type application/json;
      return 200 '{"access_token":"$MINTED","token_type":"Bearer","expires_in":3600}';
    }
    location = /sni  { return 200 "\$server_addr \$ssl_server_name \$http_x_api_key\n"; }
    $( [ -f $ECHO_MOD ] && echo 'location = /headers { echo -n $echo_client_request_headers; }' )
    location /bytes/ {
      if (\$http_x_api_key != "$SECRET") { return 401 "missing secret\n"; }
      alias $W/www/;
    }
  }
}
EOF
wait_port() {  # wait_port PORT PID NAME LOG
  for _ in $(seq 1 80); do
    kill -0 "$2" 2>/dev/null || { echo "$3 exited; its log:" >&2; tail -n 20 "$4" >&2; exit 1; }
    (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0
    sleep 0.25
  done
  echo "$3 did not listen on 127.0.0.1:$1" >&2; exit 1
}
setsid nginx -p "$W" -c "$W/nginx.conf" -e "$W/nginx.err" -g 'daemon off;' >> "$W/nginx.log" 2>&1 &
NGINX_PG=$!
wait_port "$UP" "$NGINX_PG" nginx "$W/nginx.err"

# --- vaultgate ------------------------------------------------------------------------------
mkdir -p "$W/vg"; head -c 32 /dev/urandom > "$W/vg/master.key"; chmod 600 "$W/vg/master.key"
cat > "$W/vg/vaultgate.yaml" <<YAML
listen:
  proxy: 127.0.0.1:$VP
  admin: unix:$W/vg/admin.sock
ca:
  cert: $W/proxy-ca.crt
  key: $W/proxy-ca.key
upstream:
  ca_file: $W/upstream-ca.crt
  resolve:
    $BOUND: 127.0.0.1
    $OTHER: 127.0.0.2
store:
  path: $W/vg/vaultgate.db
  master_key_file: $W/vg/master.key
log:
  access: $W/vg/access.log
  level: warn
limits:
  max_connections: 10000
  max_connections_per_client: $((IDLE + 1000))   # every client here is 127.0.0.1
vaults:
  - name: bench
    credentials:
      BENCH_KEY: { env: BENCH_SECRET }
      BENCH_ID: { env: BENCH_ID }
    services:
      - host: $BOUND
        port: $UP
        auth: ${SERVICE_AUTH//@UP@/$UP}
sessions:
  default: { vaults: [bench], egress_policy: bench }
egress_policies:
  bench:
    allow_https: true
    allowed_domains: ["$BOUND:$UP", "$OTHER:$UP"]
YAML
BENCH_SECRET=$SECRET BENCH_ID=$KEY_ID "$VG" check-config --config "$W/vg/vaultgate.yaml"
start_vg() {
  stop_pg "$VG_PG"
  : > "$W/vg/access.log"
  BENCH_SECRET=$SECRET BENCH_ID=$KEY_ID setsid "$VG" serve --config "$W/vg/vaultgate.yaml" >> "$W/vg/serve.log" 2>&1 &
  VG_PG=$!
  wait_port "$VP" "$VG_PG" vaultgate "$W/vg/serve.log"
}
start_vg

# --- correctness first: a proxy that does not inject cannot look fast ----------------------
via() {  # via HOST PATH [curl args]: through vaultgate
  local host=$1 path=$2; shift 2
  curl -sS --max-time 15 --proxy "http://127.0.0.1:$VP" --cacert "$W/client-trust.pem" \
    "https://$host:$UP$path" "$@" 2>&1 || true
}
fails=0
expect() {  # expect NAME GOT WANT
  if [ "$2" = "$3" ]; then printf '  ok    %-52s %s\n' "$1" "$2"
  else printf '  FAIL  %-52s got %q, want %q\n' "$1" "$2" "$3"; fails=$((fails + 1)); fi
}
echo "checks (vaultgate at 127.0.0.1:$VP, nginx at 127.0.0.1:$UP, auth $AUTH):"
expect "bound host: placeholder replaced by the credential" \
  "$(via $BOUND "$ECHO_PATH" -H "$CLIENT_HDR")" "$WANT"
[ "$AUTH" = api-key ] && expect "bound host: secret added when the client sent none" "$(via $BOUND /echo)" "$SECRET"
if [ -f $ECHO_MOD ] && [ "$AUTH" = api-key ]; then
  expect "bound host: exactly one x-api-key reaches the origin" \
    "$(via $BOUND /headers -H "x-api-key: $PLACEHOLDER" -H "X-Api-Key: b" -H "X_Api_Key: c" |
       grep -ciE '^x[-_]api[-_]key:' || true)" 1
fi
expect "other host (tunnelled): placeholder untouched" \
  "$(via $OTHER /echo -H "x-api-key: $PLACEHOLDER")" "$PLACEHOLDER"
expect "Host-header spoof on a tunnel: no secret" \
  "$(via $OTHER /sni -H "x-api-key: $PLACEHOLDER" -H "Host: $BOUND:$UP")" "127.0.0.2 $OTHER $PLACEHOLDER"
expect "Host-header spoof inside the MITM: refused (421)" \
  "$(via $BOUND /echo -o /dev/null -w '%{http_code}' -H "Host: $OTHER:$UP")" 421
expect "direct baseline reaches nginx" \
  "$(curl -sS --max-time 15 --cacert "$W/upstream-ca.crt" --resolve "$BOUND:$UP:127.0.0.1" \
     -H "x-api-key: $SECRET" "https://$BOUND:$UP/echo" 2>&1 || true)" "$SECRET"
if [ $fails -gt 0 ]; then echo "$fails check(s) failed; no load is run" >&2; KEEP=1; exit 1; fi

# --- load ------------------------------------------------------------------------------------
HZ=$(getconf CLK_TCK)
cpu_ticks() { local st; st=$(cat "/proc/$1/stat") || { echo 0; return; }; st=${st##*) }
              set -- $st; echo $(( ${12} + ${13} )); }          # utime + stime, all threads
rss_kib() { awk '/^VmRSS:/ {print $2}' "/proc/$1/status" 2>/dev/null || echo 0; }
up_conns() { ss -Htn state established "( dport = :$UP )" | wc -l; }
RES=$OUT/vaultgate-bench.jsonl; : > "$RES"
PROFILING=0
one() {  # one SYSTEM SCENARIO RUN
  local s=$1 sc=$2 r=$3 c0=0 c1=0 rss0=0 rss=0 held=0 args
  if [ "$s" = direct ]; then
    args=(--cacert "$W/upstream-ca.crt" --resolve "$BOUND:$UP:127.0.0.1" --header "$DIRECT_HDR")
  else
    args=(--cacert "$W/client-trust.pem" --proxy "http://127.0.0.1:$VP" --header "$CLIENT_HDR")
  fi
  local echo=(--url "https://$BOUND:$UP$ECHO_PATH" --expect "$WANT")
  case $sc in
    ka)    args+=("${echo[@]}" --connections 32 --duration "$DUR");;
    fresh) args+=("${echo[@]}" --connections 8 --duration "$DUR" --fresh);;
    bytes) args+=(--url "https://$BOUND:$UP/bytes/1048576" --expect-len 1048576
                  --connections 8 --duration "$DUR");;
    idle)  [ "$s" = direct ] && return 0
           start_vg; sleep 1   # a fresh process: RSS growth is due to these connections
           args+=("${echo[@]}" --connections "$IDLE" --requests $((2 * IDLE)) --hold 5 --duration 60);;
    *) echo "unknown scenario $sc" >&2; exit 2;;
  esac
  if [ "$s" != direct ]; then c0=$(cpu_ticks "$VG_PG"); rss0=$(rss_kib "$VG_PG"); fi
  "$W/loadgen" "${args[@]}" > "$W/lg.out" 2> "$W/lg.err" & LG=$!
  if [ "$PROFILING" = 1 ] && [ "$s" != direct ] && [ "$sc" != idle ]; then
    sleep 0.5   # past connection setup; samples the steady state of the scenario
    perf record -q -F 999 -e cpu-clock -p "$VG_PG" -o "$OUT/perf-$sc.data" -- sleep $((DUR - 1)) \
      > "$W/perf.log" 2>&1 || { echo "perf record failed:"; cat "$W/perf.log"; } >&2
  fi
  if [ "$sc" = idle ]; then
    for _ in $(seq 1 240); do
      grep -q holding "$W/lg.err" && break
      kill -0 $LG 2>/dev/null || break
      sleep 0.5
    done
    sleep 1; rss=$(rss_kib "$VG_PG"); held=$(up_conns)
  fi
  wait $LG || true; LG=""
  if [ "$s" != direct ]; then c1=$(cpu_ticks "$VG_PG"); [ "$sc" = idle ] || rss=$(rss_kib "$VG_PG"); fi
  python3 - "$W/lg.out" "$s" "$sc" "$r" "$rss0" "$rss" "$((c1 - c0))" "$held" "$HZ" >> "$RES" <<'PY' ||
import json, sys
f, s, sc, r, rss0, rss, ticks, held, hz = sys.argv[1:]
d = json.loads(open(f).read())
d.update(system=s, scenario=sc, run=int(r), rss0_mib=int(rss0) / 1024, rss_mib=int(rss) / 1024,
         proxy_cpu_s=int(ticks) / int(hz), up_conns_held=int(held))
print(json.dumps(d))
PY
    { echo "  $s $sc: no result:"; cat "$W/lg.err"; } >&2
  tail -n1 "$RES" | python3 -c 'import json, sys; d = json.loads(sys.stdin.read())
print("  run %(run)d %(scenario)-5s %(system)-9s ok=%(ok)d errors=%(errors)d req/s=%(rps).0f "
      "p50=%(p50_ms).2fms p99=%(p99_ms).2fms MB/s=%(mb).1f %(first_error)s" % dict(d, mb=d["bytes_per_s"] / 1e6))'
}
echo
echo "load: $RUNS run(s) x $DUR s per scenario; $(nproc) cores shared by loadgen, vaultgate and nginx;" \
     "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
for r in $(seq 1 "$RUNS"); do
  [ "$r" -gt 1 ] && start_vg
  for sc in ${SCEN//,/ }; do
    # alternate which system goes first, so drift in the machine's load hits both alike
    if [ $((r % 2)) = 1 ]; then order="direct vaultgate"; else order="vaultgate direct"; fi
    for s in $order; do one "$s" "$sc" "$r"; sleep 1; done
  done
done
if [ "$AUTH" = oauth2-client-credentials ]; then
  echo "minted tokens in the last run (one fetch per expiry): $(curl -sS --max-time 5 \
    --unix-socket "$W/vg/admin.sock" http://vaultgate/metrics | grep -E '^vaultgate_token_(fetches|cache_hits)_total' | tr '\n' ' ')"
fi
echo
echo "vaultgate vs direct (medians of $RUNS run(s); absolute numbers are noisy, compare ratios):"
python3 "$HERE/report.py" "$RES"
echo "results: $RES"

if [ $PROFILE = 1 ]; then
  if ! command -v perf >/dev/null || ! perf record -q -e cpu-clock -o "$W/perf-test.data" true >/dev/null 2>&1; then
    echo "--profile: perf is missing or not allowed here (apt-get install linux-perf; root)" >&2
  else
    echo
    echo "profile: one more run per scenario, vaultgate sampled with perf (cpu-clock, 999 Hz)"
    RES=$OUT/profiled.jsonl; : > "$RES"; PROFILING=1
    for sc in ${SCEN//,/ }; do
      [ "$sc" = idle ] && continue
      start_vg; one vaultgate "$sc" 0
      echo "  top functions by self time (perf report -i $OUT/perf-$sc.data):"
      perf report -i "$OUT/perf-$sc.data" --stdio --no-children -F overhead,dso,sym --percent-limit 1.5 \
        2>/dev/null | grep -E '^ +[0-9]' | sed -E 's/[[:space:]]+$//' | cut -c1-150 | head -n 20 | sed 's/^/    /'
      echo "  by library:"
      perf report -i "$OUT/perf-$sc.data" --stdio --no-children -F overhead,dso --percent-limit 1 \
        2>/dev/null | grep -E '^ +[0-9]' | sed -E 's/[[:space:]]+$//' | head -n 8 | sed 's/^/    /'
    done
    PROFILING=0
  fi
fi

# --- side by side with Squid and mitmproxy (the shared peers harness) -----------------------
[ "$PEERS" = no ] && exit 0
why=""
if [ ! -x "$PEERS_DIR/run.sh" ]; then why="no harness at $PEERS_DIR"
elif ! command -v squid >/dev/null && ! command -v mitmdump >/dev/null; then why="neither squid nor mitmdump installed"
elif [ "$(id -u)" != 0 ]; then why="the harness needs root"
fi
if [ -n "$why" ]; then
  echo "Squid/mitmproxy comparison skipped: $why"
  [ "$PEERS" = yes ] && exit 1
  exit 0
fi
# The harness's "other host untouched" and Host-spoof checks let the client trust only the
# proxy CA, which assumes the proxy MITMs every host. vaultgate tunnels unbound hosts (the
# client then sees the origin's own certificate), so in a copy of the harness the client
# trusts the proxy CA and the upstream CA together, as a bootstrapped sandbox does. Squid
# and mitmproxy still present proxy-CA leaves for every host; the checks are otherwise unchanged.
P=$W/peers; cp -r "$PEERS_DIR" "$P"; chmod -R u+w "$P"
if grep -q '^"\$HERE/pki.sh" "\$W" >/dev/null$' "$P/run.sh" && grep -q -- '--cacert \$W/proxy-ca.crt --proxy' "$P/run.sh"; then
  sed -i 's|^"\$HERE/pki.sh" "\$W" >/dev/null$|&\ncat "$W/proxy-ca.crt" "$W/upstream-ca.crt" > "$W/client-trust.pem"; chmod 644 "$W/client-trust.pem"|
          s|--cacert \$W/proxy-ca.crt --proxy|--cacert $W/client-trust.pem --proxy|' "$P/run.sh"
else
  echo "note: the harness's client trust setup changed; running it unmodified" >&2
fi
echo
echo "side by side in the shared harness ($PEERS_DIR): direct, Squid, mitmproxy, vaultgate"
"$P/run.sh" --proxy-name vaultgate --proxy-cmd "VAULTGATE=$VG $P/vaultgate-cmd.sh" \
  --runs "$RUNS" --duration "$DUR" --scenarios "$SCEN" --idle-conns "$IDLE" --out "$OUT/peers.jsonl" \
  2>&1 | grep -E '^(check|  ->|run )' || true
if [ -s "$OUT/peers.jsonl" ]; then
  echo
  echo "vaultgate vs Squid vs mitmproxy (medians of $RUNS run(s), ratios to direct from the same run):"
  python3 "$HERE/report.py" "$OUT/peers.jsonl"
  echo "results: $OUT/peers.jsonl"
else
  echo "the harness produced no results" >&2; exit 1
fi
