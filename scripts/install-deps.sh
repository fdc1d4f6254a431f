#!/usr/bin/env bash
# Installs vaultgate's build and test dependencies from Debian 12. Idempotent:
# skips apt-get entirely when everything is already installed.
set -euo pipefail

packages=(
  cmake ninja-build g++ pkg-config
  libboost1.81-dev libssl-dev nlohmann-json3-dev libyaml-cpp-dev libidn2-dev
  libpsl-dev publicsuffix
  libgtest-dev
  # command-line parsing
  libcli11-dev
  # fuzzing (scripts/fuzz.sh, CI)
  clang-14 libclang-rt-14-dev
  # integration tests: real clients and tools
  curl python3 python3-requests openssl iproute2 nftables git
  # signed and minted credentials: origins that re-verify with the real SDKs
  python3-botocore python3-jwt
  # HTTP/2 and the shared store
  libnghttp2-dev python3-h2 python3-httpx nodejs
  libpq-dev postgresql
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi

sudo_cmd=()
[ "$(id -u)" -eq 0 ] || sudo_cmd=(sudo)
echo "installing: ${missing[*]}"
"${sudo_cmd[@]}" apt-get update -qq
DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
