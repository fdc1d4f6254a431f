#!/usr/bin/env bash
# Installs vaultgate: ${PREFIX:-/usr/local}/bin/vaultgate and its bash
# completion (PREFIX/share/bash-completion/completions/vaultgate). Builds the
# binary first when build/ (or $BUILD_DIR) has none. Run with sudo for a
# system prefix; PREFIX=$HOME/.local needs no root.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build_dir=${BUILD_DIR:-$root/build}
prefix=${PREFIX:-/usr/local}
if [[ ! -x "$build_dir/vaultgate" ]]; then
    BUILD_DIR="$build_dir" BUILD_TARGETS=vaultgate "$root/scripts/build.sh"
fi
cmake --install "$build_dir" --prefix "$prefix"
echo "installed $prefix/bin/vaultgate; open a new shell for the bash completion"
