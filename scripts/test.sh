#!/usr/bin/env bash
# Builds vaultgate and runs every test (unit and integration) with CTest.
# SANITIZE=1 builds in build-asan/ with AddressSanitizer + UndefinedBehaviorSanitizer.
# $CMAKE_OPTIONS (a word list) goes to cmake, e.g. -DVAULTGATE_UNITY_BUILD=ON.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/scripts/install-deps.sh"
if [ "${SANITIZE:-0}" = 1 ]; then
  export BUILD_DIR=${BUILD_DIR:-$root/build-asan}
  # shellcheck disable=SC2086 # the options are a word list
  "$root/scripts/build.sh" -DVAULTGATE_SANITIZE=ON -DCMAKE_BUILD_TYPE=Debug ${CMAKE_OPTIONS:-}
else
  export BUILD_DIR=${BUILD_DIR:-$root/build}
  # shellcheck disable=SC2086 # the options are a word list
  "$root/scripts/build.sh" ${CMAKE_OPTIONS:-}
fi
cd "$BUILD_DIR"
ctest --output-on-failure --timeout 300 -j2 "$@"

# Every log the run wrote (the proxies' stderr is captured by CTest) must be
# free of the test secrets.
for secret in 'sk-real/SECRET+9f8e=7d6c5b4a' 'sk-live-AAAA-1111-first-value' 'sk-live-BBBB-2222-second-value' \
              'ak_live_composio-REAL-KEY-7f3a9c'; do
  if grep -rqF -- "$secret" Testing/Temporary/ 2>/dev/null; then
    echo "a test secret appears in the test logs (Testing/Temporary/)" >&2
    exit 1
  fi
done
echo "no test secret in any test log"
