#!/usr/bin/env bash
# Configures and builds vaultgate in build/ (or $BUILD_DIR). Extra arguments go
# to cmake; $BUILD_TARGETS (default: everything) names the ninja targets.
# Dependencies are installed by scripts/install-deps.sh (run.sh and test.sh call it).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build_dir=${BUILD_DIR:-$root/build}
cmake -S "$root" -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=${BUILD_TYPE:-RelWithDebInfo} "$@" >/dev/null
# shellcheck disable=SC2086 # the targets are a word list
ninja -C "$build_dir" ${BUILD_TARGETS:-}
