#!/usr/bin/env bash
# Builds vaultgate and runs every test (unit and integration) with CTest.
# SANITIZE=1 builds in build-asan/ with AddressSanitizer + UndefinedBehaviorSanitizer.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
if [ "${SANITIZE:-0}" = 1 ]; then
  export BUILD_DIR=${BUILD_DIR:-$root/build-asan}
  "$root/scripts/build.sh" -DVAULTGATE_SANITIZE=ON -DCMAKE_BUILD_TYPE=Debug
else
  export BUILD_DIR=${BUILD_DIR:-$root/build}
  "$root/scripts/build.sh"
fi
cd "$BUILD_DIR"
ctest --output-on-failure --timeout 300 -j2 "$@"
