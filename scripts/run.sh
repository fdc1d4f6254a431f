#!/usr/bin/env bash
# Quick start: installs the build dependencies, builds the vaultgate binary
# (not the tests) and serves the example config. On first run it
# generates the proxy CA in certs/ and a master key for the file store.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/scripts/install-deps.sh"
BUILD_TARGETS=vaultgate "$root/scripts/build.sh"
cd "$root"
if [ ! -f certs/master.key ]; then
  (umask 077 && head -c 32 /dev/urandom > certs/master.key)
  echo "generated certs/master.key (keep it secret; it encrypts vaultgate.db)"
fi
if [ ! -f certs/admin.token ]; then
  (umask 077 && head -c 32 /dev/urandom | base64 | tr -d '/+=\n' > certs/admin.token)
  echo "generated certs/admin.token (the admin API's bearer token)"
fi
exec "$root/build/vaultgate" serve --config config/vaultgate.yaml
