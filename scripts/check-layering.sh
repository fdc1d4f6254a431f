#!/usr/bin/env bash
# Fails when a source file includes a header from a layer above its own.
# The layers, each allowed to use the ones it names and everything below them:
#   util -> {http, egress, crypto, observe} -> credentials -> config -> state
#        -> {vault, admin} -> net/io -> net/upstream -> net/mint -> net/proxy -> net/admin -> app -> cli
# net/h2 (the nghttp2 glue) uses net/io only; net/forward (the exchange with
# the origin, over HTTP/1.1 or HTTP/2) uses net/h2 and is used by net/proxy.
# mem uses util only and is used from net/io up. Layers in braces are
# siblings: neither includes the other. signing (AWS SigV4) uses http and
# crypto, minting (the pure steps of minted tokens) uses crypto; both are
# used from state up. pgstore (the PostgreSQL store, libpq) uses vault and is
# used from app up.
set -euo pipefail
cd "$(dirname "$0")/.."

declare -A uses=(
  [util]=""
  [mem]="util"
  [http]="util" [egress]="util" [crypto]="util" [observe]="util"
  [signing]="http crypto"
  [credentials]="http egress crypto observe"
  [config]="credentials"
  [minting]="crypto"
  [state]="config signing minting"
  [vault]="state" [admin]="state"
  [net/io]="vault admin mem"
  [net/upstream]="net/io"
  [net/mint]="net/upstream"
  [net/h2]="net/io"
  [net/forward]="net/h2"
  [net/proxy]="net/mint net/forward"
  [net/admin]="net/proxy"
  [pgstore]="vault"
  [app]="net/admin pgstore"
  [cli]="app"
)

# Everything a layer may include: itself and the closure of what it uses.
declare -A allowed
closure() {
  local layer=$1 dep out="$1"
  for dep in ${uses[$layer]}; do out+=" $(closure "$dep")"; done
  echo "$out"
}
for layer in "${!uses[@]}"; do allowed[$layer]=" $(closure "$layer" | tr ' ' '\n' | sort -u | tr '\n' ' ') "; done

layer_of_file() {
  case $1 in
    include/vaultgate/*/*) local rest=${1#include/vaultgate/}; echo "${rest%%/*}" ;;
    src/core/*/*) local rest=${1#src/core/}; echo "${rest%%/*}" ;;
    src/net/*/*) local rest=${1#src/net/}; echo "net/${rest%%/*}" ;;
    src/mem/*) echo mem ;;
    src/app/*) echo app ;;
    src/cli/*) echo cli ;;
    *) echo "" ;;
  esac
}

layer_of_include() {
  case $1 in
    vaultgate/*/*) local rest=${1#vaultgate/}; echo "${rest%%/*}" ;;
    net/*/*) local rest=${1#net/}; echo "net/${rest%%/*}" ;;
    cli/*) echo cli ;;
    */*) echo "?" ;;
    *) echo "$2" ;;  # a header beside the file: same layer
  esac
}

status=0
while IFS= read -r file; do
  own=$(layer_of_file "$file")
  if [ -z "$own" ] || [ -z "${uses[$own]+set}" ]; then
    echo "$file: not in any layer folder" >&2
    status=1
    continue
  fi
  while IFS=: read -r line target; do
    target=${target#*\"}
    target=${target%\"*}
    dep=$(layer_of_include "$target" "$own")
    if [ "$dep" = "?" ] || [ -z "${uses[$dep]+set}" ]; then
      echo "$file:$line: includes \"$target\", which is in no layer" >&2
      status=1
    elif [[ ${allowed[$own]} != *" $dep "* ]]; then
      echo "$file:$line: $own includes \"$target\" from $dep, which is not below it" >&2
      status=1
    fi
  done < <(grep -n '^[[:space:]]*#[[:space:]]*include[[:space:]]*"' "$file" || true)
done < <(git ls-files 'src/*.cpp' 'src/*.hpp' 'include/*.hpp')

if [ "$status" = 0 ]; then echo "layering: every include points down"; fi
exit "$status"
