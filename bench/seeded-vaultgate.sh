#!/usr/bin/env bash
# bench/seeded-vaultgate.sh -- vaultgate with a large store, for bench/run.sh --vaultgate.
# Before `serve`, writes SEED_SESSIONS sessions and SEED_SERVICES services (defaults 100000
# and 10000) into the still empty store of the config bench/run.sh generated, with
# bench/seed_store.cpp built as SEED_STORE; every other command goes straight through.
#
#   g++ ... bench/seed_store.cpp ... -o /tmp/seed_store      (the line is in bench/scale.sh)
#   VAULTGATE_REAL=build/vaultgate SEED_STORE=/tmp/seed_store \
#     bench/run.sh --vaultgate bench/seeded-vaultgate.sh --scenarios ka --peers no
set -euo pipefail
real=${VAULTGATE_REAL:?set VAULTGATE_REAL to the vaultgate binary}
if [ "${1:-}" = serve ] && [ "${2:-}" = --config ]; then
  dir=$(dirname "$3")   # bench/run.sh keeps the store and master key beside its config
  [ -s "$dir/vaultgate.db" ] ||
    "${SEED_STORE:?set SEED_STORE to a built bench/seed_store}" "$dir/vaultgate.db" "$dir/master.key" \
      "${SEED_SESSIONS:-100000}" "${SEED_SERVICES:-10000}" >&2
fi
exec "$real" "$@"
