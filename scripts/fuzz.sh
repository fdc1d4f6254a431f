#!/usr/bin/env bash
# Builds the libFuzzer targets in build-fuzz/ (clang, ASan + UBSan) and runs
# each one for a bounded time, as many at once as there are cores.
#
#   scripts/fuzz.sh [seconds-per-target] [target...]
#
# Defaults: 60 s, every target. The seed corpus in fuzz/corpus/<target>/ and
# the saved reproducers in fuzz/regressions/<target>-* are copied to a scratch
# directory first, so new inputs found by a run never end up in the repository.
# Crash reproducers are kept (their paths are printed) in $FUZZ_WORK_DIR
# (default: a temporary directory, left in place when a target fails). Exits
# non-zero if any target crashed, leaked, timed out or ran out of memory.
# Extra libFuzzer flags can be given in $FUZZ_FLAGS. FUZZ_BUILD_ONLY=1 builds
# the targets and runs none. $CMAKE_OPTIONS (a word list) goes to cmake.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
build_dir=${BUILD_DIR:-$root/build-fuzz}
seconds=${1:-60}
shift || true
# fuzz_h2_server needs the network libraries built for the fuzzer: named
# on the command line only, until its build is part of CI's budget.
all_targets=(fuzz_request_head fuzz_response_head fuzz_chunked fuzz_host fuzz_config fuzz_client_hello
  fuzz_sigv4_canonical)
targets=("$@")
[ ${#targets[@]} -eq 0 ] && targets=("${all_targets[@]}")

if ! [[ $seconds =~ ^[1-9][0-9]*$ ]]; then
  echo "usage: $0 [seconds-per-target] [target...]" >&2
  exit 2
fi

cxx=${CXX_FUZZ:-clang++-14}
command -v "$cxx" >/dev/null || { echo "fuzz.sh: $cxx not found (apt-get install clang-14 libclang-rt-14-dev)" >&2; exit 2; }

# shellcheck disable=SC2086 # the options are a word list
cmake -S "$root" -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DVAULTGATE_FUZZ=ON -DVAULTGATE_TESTS=OFF -DCMAKE_CXX_COMPILER="$cxx" ${CMAKE_OPTIONS:-} >/dev/null
# Only the fuzz targets: the network side is not fuzzed and takes long to build.
ninja -C "$build_dir" "${targets[@]}"
[ "${FUZZ_BUILD_ONLY:-0}" = 1 ] && exit 0

work=${FUZZ_WORK_DIR:-$(mktemp -d "${TMPDIR:-/tmp}/vaultgate-fuzz.XXXXXX")}
mkdir -p "$work"
# One libFuzzer process uses one core: $FUZZ_JOBS targets (default: one per
# core) run side by side, each still for the full time.
jobs=${FUZZ_JOBS:-$(nproc)}

# Runs one target and writes its summary line to $work/<target>/summary.
run_target() {
  local t=$1 corpus=$work/$1/corpus artifacts=$work/$1/artifacts log=$work/$1/fuzz.log status=0 execs
  mkdir -p "$corpus" "$artifacts"
  if [ -d "$root/fuzz/corpus/$t" ]; then cp -R "$root/fuzz/corpus/$t/." "$corpus/"; fi
  # Saved reproducers run first, as seeds: a bug that comes back fails at once.
  for r in "$root/fuzz/regressions/$t"-*; do [ -f "$r" ] && cp "$r" "$corpus/"; done
  echo "== $t: ${seconds}s (log: $log)"
  # Run from the work dir: libFuzzer writes crash-* files to the cwd when no
  # artifact prefix applies, and the repository must stay clean.
  (cd "$work/$t" && "$build_dir/fuzz/$t" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
      -print_final_stats=1 -artifact_prefix="$artifacts/" ${FUZZ_FLAGS:-} "$corpus") >"$log" 2>&1 || status=$?
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)
  if [ "$status" -ne 0 ]; then
    echo "$t: FAILED (exit $status) after ${execs:-?} execs; reproducer(s): $(ls "$artifacts" | tr '\n' ' ')" >"$work/$t/summary"
    grep -E '^(==[0-9]+==ERROR|SUMMARY|.*invariant broken|.*runtime error)' "$log" | head -n 5 || true
  else
    echo "$t: ok, ${execs:-?} execs, corpus $(ls "$corpus" | wc -l) files" >"$work/$t/summary"
  fi
}

for t in "${targets[@]}"; do
  while [ "$(jobs -rp | wc -l)" -ge "$jobs" ]; do wait -n || true; done
  run_target "$t" &
done
wait

failed=()
summary=()
for t in "${targets[@]}"; do
  summary+=("$(cat "$work/$t/summary" 2>/dev/null || echo "$t: FAILED (did not run)")")
  [[ ${summary[-1]} == "$t: ok,"* ]] || failed+=("$t")
done

echo
echo "== summary (${seconds}s per target; work dir $work)"
printf '  %s\n' "${summary[@]}"
if [ ${#failed[@]} -ne 0 ]; then
  echo "crashing targets: ${failed[*]}; reproduce with $build_dir/fuzz/<target> <artifact>" >&2
  exit 1
fi
[ -n "${FUZZ_WORK_DIR:-}" ] || rm -rf "$work"
