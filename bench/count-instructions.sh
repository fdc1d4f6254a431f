#!/usr/bin/env bash
# bench/count-instructions.sh -- user-space instructions per new connection, under callgrind.
#
# Timing a change to the handshake path on a 2-core VM moves by 5-10% from run to run,
# more than most changes there are worth. Counting instructions is exact: this runs
# vaultgate under valgrind's callgrind with the configuration a kept bench/run.sh scratch
# directory holds (bench/run.sh --keep), opens N new connections through it (a CONNECT, a
# full TLS handshake and one GET each, as in the `fresh` scenario), and prints the
# instructions vaultgate executed per connection, then the functions that cost the most
# (inclusive). Kernel work (system calls, context switches) is not counted, and
# valgrind's emulated CPU makes libcrypto take code paths of its own: compare two
# binaries with each other, not with timings.
#
#   bench/count-instructions.sh SCRATCH_DIR [N] [VAULTGATE_BIN]     (N defaults to 300)
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
W=${1:?usage: bench/count-instructions.sh SCRATCH_DIR [N] [VAULTGATE_BIN]}
N=${2:-300}
VG=${3:-$HERE/../build-release/vaultgate}
[[ $N =~ ^[0-9]+$ && $N -ge 10 && $N -le 5000 ]] || { echo "N: 10..5000" >&2; exit 2; }
for f in "$W/nginx.conf" "$W/vg/vaultgate.yaml" "$W/loadgen" "$W/client-trust.pem"; do
  [ -e "$f" ] || { echo "$f missing: pass a directory kept by bench/run.sh --keep" >&2; exit 2; }
done
for t in valgrind callgrind_control callgrind_annotate nginx ss; do
  command -v $t >/dev/null || { echo "needs $t (apt-get install -y valgrind nginx iproute2)" >&2; exit 2; }
done
[ -x "$VG" ] || { echo "$VG: not an executable (build it: ninja -C build-release vaultgate)" >&2; exit 2; }

PROXY_PORT=$(sed -n 's/^ *proxy: *127\.0\.0\.1:\([0-9]*\).*/\1/p' "$W/vg/vaultgate.yaml" | head -1)
UP_PORT=$(sed -n 's/.*listen 127\.0\.0\.1:\([0-9]*\) ssl.*/\1/p' "$W/nginx.conf" | head -1)
[ -n "$PROXY_PORT" ] && [ -n "$UP_PORT" ] || { echo "cannot read the ports from $W" >&2; exit 2; }
listening() { ss -Htln | grep -q ":$1 " || return 1; }
for port in "$PROXY_PORT" "$UP_PORT"; do
  if listening "$port"; then echo "port $port is in use (a bench/run.sh still running?)" >&2; exit 2; fi
done
OUT=$(mktemp -d /tmp/vaultgate-callgrind.XXXXXX)

pids=()
cleanup() {
  for p in "${pids[@]}"; do kill -- -"$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do while kill -0 "$p" 2>/dev/null; do sleep 0.1; done; done
}
trap cleanup EXIT

setsid nginx -p "$W" -c "$W/nginx.conf" -e "$W/nginx.err" -g 'daemon off;' >> "$W/nginx.log" 2>&1 &
pids+=($!)
BENCH_SECRET=sk-bench-REAL-secret setsid valgrind --tool=callgrind --callgrind-out-file="$OUT/callgrind.out" \
  "$VG" serve --config "$W/vg/vaultgate.yaml" > "$OUT/serve.log" 2>&1 &
VGPID=$!; pids+=($VGPID)
for _ in $(seq 300); do listening "$PROXY_PORT" && break; sleep 0.2; done
if ! listening "$PROXY_PORT" || ! kill -0 "$VGPID" 2>/dev/null; then
  echo "vaultgate did not start; see $OUT/serve.log" >&2; exit 1
fi

fresh() {
  "$W/loadgen" --cacert "$W/client-trust.pem" --proxy "http://127.0.0.1:$PROXY_PORT" \
    --header "x-api-key: placeholder" --url "https://api.bench.test:$UP_PORT/echo" \
    --expect sk-bench-REAL-secret --connections 4 --requests "$1" --fresh
}
# Warm-up: the leaf certificate is minted and the upstream pool filled before counting.
fresh 40 > /dev/null || { echo "the warm-up failed; see $OUT/serve.log" >&2; exit 1; }
callgrind_control --zero "$VGPID" > "$OUT/control.log" 2>&1 || { echo "callgrind_control failed: $(cat "$OUT/control.log")" >&2; exit 1; }
fresh "$N" > "$OUT/loadgen.json" || true
callgrind_control --dump "$VGPID" >> "$OUT/control.log" 2>&1 || { echo "callgrind_control failed: $(cat "$OUT/control.log")" >&2; exit 1; }
grep -q "\"ok\":$N,\"errors\":0" "$OUT/loadgen.json" || { echo "not every request succeeded: $(cat "$OUT/loadgen.json")" >&2; exit 1; }

DUMP=$OUT/callgrind.out.1
[ -s "$DUMP" ] || { echo "no profile was dumped ($DUMP)" >&2; exit 1; }
# The dump's own summary line ("summary: <Ir>"), a stable part of the format.
TOTAL=$(sed -n 's/^summary: *\([0-9]*\).*/\1/p' "$DUMP" | head -1)
[[ $TOTAL =~ ^[0-9]+$ ]] || { echo "no summary line in $DUMP" >&2; exit 1; }
echo "instructions per connection: $((TOTAL / N))   ($N connections; profile: $DUMP)"
# The costliest functions, inclusive, per connection (awk reads to the end, so
# no part of the pipe is cut short).
callgrind_annotate --inclusive=yes "$DUMP" > "$OUT/annotate.txt" 2>&1 || true
grep -v -e 'PROGRAM TOTALS' -e 'clone.S:clone' -e 'pthread_create.c' "$OUT/annotate.txt" |
  awk -v n="$N" '/^ *[0-9][0-9,]* / && shown < 30 { v = $1; gsub(",", "", v); $1 = ""; sub(/^ *\([^)]*\)/, "");
                  printf "%10d %s\n", v / n, substr($0, 1, 140); ++shown }' || true
