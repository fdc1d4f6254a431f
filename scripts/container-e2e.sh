#!/usr/bin/env bash
# End-to-end test of the vaultgate image and the compose gateway, run for real.
#
#   sudo scripts/container-e2e.sh [all|setup|build|up|test|systemd|replicas|down]   (default: all)
#
# On a Debian 12 machine as root: installs podman and podman-compose (unless a
# Docker engine answers, which is then used with `docker compose`), makes a
# debian:12 base image with debootstrap if the engine has none, builds
# docker/Dockerfile, starts docker/compose.yaml with docker/e2e/compose.e2e.yaml
# over it (a stand-in TLS origin with its own CA, a sandbox with curl and
# python3), proves from the sandbox what the gateway promises, runs
# config/vaultgate.service under systemd as a podman container's PID 1 (podman
# only), runs docker/compose.replicas.yaml (two replicas on one PostgreSQL,
# docker/e2e/replicas.sh), and tears it all down. The last line is "N passed, M failed"; the exit
# code is 0 only when nothing failed.
#
# Environment: VAULTGATE_IMAGE (default vaultgate:local), E2E_BUILD=0 to reuse
# an existing image, E2E_KEEP=1 to leave the stack up for a look,
# BUILD_NICE (10) and BUILD_JOBS (2) for the image build, VAULTGATE_NOFILE and
# VAULTGATE_NPROC for the gateway's ulimits (default: 65536 and 32768, or this
# shell's hard limits where lower), E2E_WORK for the scratch directory,
# E2E_VAULTGATE_BIN for a binary built on this host to run under systemd,
# E2E_SYSTEMD_CONTAINER for that container's name (two runs side by side),
# POSTGRES_IMAGE for the replicas' database (default: vaultgate-e2e-postgres:local,
# built from docker/e2e/Dockerfile.postgres).
set -uo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
e2e_dir=$repo/docker/e2e
project=vaultgate-e2e
export VAULTGATE_IMAGE=${VAULTGATE_IMAGE:-vaultgate:local}
export SANDBOX_IMAGE=vaultgate-e2e-client:local
build_nice=${BUILD_NICE:-10}
build_jobs=${BUILD_JOBS:-2}
# Kept between steps (setup, build, up, test, down); removed by down.
work=${E2E_WORK:-/var/tmp/vaultgate-e2e}
export E2E_DIR=$work/e2e
passed=0 failed=0

log() { printf '== %s\n' "$*" >&2; }
pass() { passed=$((passed + 1)); printf 'PASS %s\n' "$1"; }
fail() { failed=$((failed + 1)); printf 'FAIL %s\n' "$1"; [ $# -lt 2 ] || printf '     %s\n' "${@:2}"; }
# check NAME COMMAND...: one test, passed when the command exits 0.
check() {
    local name=$1 out
    shift
    if out=$("$@" 2>&1); then pass "$name"; else fail "$name" "$(printf '%s' "$out" | tail -n 5)"; fi
}
# A step that cannot go on: counted as a failure, and `all` still tears down.
on_die=:
die() {
    printf 'error: %s\n' "$*" >&2
    $on_die
    printf '%s passed, %s failed\n' "$passed" $((failed + 1))
    exit 1
}

# --- engine ------------------------------------------------------------------

# A Docker engine (a daemon that answers, with the compose v2 plugin) wins;
# otherwise podman with podman-compose.
pick_engine() {
    if command -v docker >/dev/null && timeout 10 docker info >/dev/null 2>&1 &&
        docker compose version >/dev/null 2>&1; then
        engine=docker
        compose=(docker compose)
    else
        engine=podman
        compose=(podman-compose)
    fi
}

install_packages() {
    local want=() p
    if [ "$engine" = podman ]; then
        # runc: crun 1.8 fails on some cgroup setups; iptables: netavark's
        # firewall driver (without it every network fails with "netavark: No such
        # file or directory"); debootstrap: the base image.
        want+=(podman podman-compose runc netavark aardvark-dns iptables debootstrap)
    fi
    want+=(openssl git)
    local missing=()
    for p in "${want[@]}"; do dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'ok installed' || missing+=("$p"); done
    [ ${#missing[@]} -eq 0 ] && return 0
    log "installing ${missing[*]}"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq >/dev/null && apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null ||
        die "apt-get install ${missing[*]} failed"
}

# podman's engine settings, as a drop-in so that the main file stays the
# packager's: runc, cgroupfs (no systemd scope per container), a file for
# events (no journald needed), and default ulimits within the hard limits of
# this shell (podman's defaults, nofile 1048576, may exceed them).
configure_podman() {
    local nofile nproc
    nofile=$(ulimit -Hn); [ "$nofile" = unlimited ] && nofile=1048576
    nproc=$(ulimit -Hu); [ "$nproc" = unlimited ] && nproc=4194304
    [ "$nofile" -gt 1048576 ] && nofile=1048576
    [ "$nproc" -gt 32768 ] && nproc=32768
    # Engine-wide, so that also podman-compose's one-shot and build containers fit.
    install -d /etc/containers/containers.conf.d
    cat >/etc/containers/containers.conf.d/50-vaultgate-e2e.conf <<EOF
# Written by vaultgate's scripts/container-e2e.sh.
[containers]
default_ulimits = ["nofile=$nofile:$nofile", "nproc=$nproc:$nproc"]

[engine]
runtime = "runc"
cgroup_manager = "cgroupfs"
events_logger = "file"
EOF
}

# debian:12 and debian:12-slim, when the engine has no such image and cannot
# pull one: debootstrap (minbase) from this machine's Debian mirror, with its
# apt configuration, imported as a single-layer image.
make_base_image() {
    if "$engine" image inspect debian:12 >/dev/null 2>&1 && "$engine" image inspect debian:12-slim >/dev/null 2>&1; then
        return 0
    fi
    if [ "$engine" = docker ] && docker pull -q debian:12 >/dev/null 2>&1 && docker pull -q debian:12-slim >/dev/null 2>&1; then
        return 0
    fi
    local mirror rootfs=$work/rootfs
    mirror=$(apt-get indextargets --format '$(REPO_URI) $(RELEASE)' 'Identifier: Packages' 2>/dev/null |
        awk '$2 == "bookworm" { print $1; exit }')
    mirror=${mirror:-http://deb.debian.org/debian/}
    log "debootstrap bookworm from $mirror"
    debootstrap --variant=minbase bookworm "$rootfs" "$mirror" >"$work/debootstrap.log" 2>&1 ||
        die "debootstrap failed: $(tail -n 3 "$work/debootstrap.log")"
    # Only the machine's Debian sources (third-party ones need keys the image lacks).
    rm -f "$rootfs/etc/apt/sources.list" && : >"$rootfs/etc/apt/sources.list"
    apt-get indextargets --format '$(REPO_URI) $(RELEASE)' 'Identifier: Packages' 2>/dev/null |
        awk '$2 ~ /^bookworm(-updates|-security)?$/ { print "deb " $1 " " $2 " main" }' | sort -u \
            >"$rootfs/etc/apt/sources.list"
    [ -s "$rootfs/etc/apt/sources.list" ] || echo "deb $mirror bookworm main" >"$rootfs/etc/apt/sources.list"
    cp -a /etc/apt/apt.conf.d/. "$rootfs/etc/apt/apt.conf.d/"
    rm -rf "$rootfs"/var/cache/apt/archives/*.deb "$rootfs"/var/lib/apt/lists/*
    tar -C "$rootfs" -c . | "$engine" import \
        --change 'CMD ["bash"]' --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
        - debian:12 >/dev/null || die "image import failed"
    "$engine" tag debian:12 debian:12-slim
    rm -rf "$rootfs"
}

# --- phases ------------------------------------------------------------------

phase_setup() {
    install_packages
    [ "$engine" = podman ] && configure_podman
    make_base_image
}

# The commit the image's sources come from: the last one that changed what the
# build stage copies (so a commit elsewhere reuses the cached build), with
# -dirty when those files have uncommitted changes.
source_commit() {
    local c
    c=$(git -C "$repo" log -1 --format=%h --abbrev=12 -- CMakeLists.txt include src 2>/dev/null)
    [ -n "$c" ] || { echo unknown; return; }
    [ -z "$(git -C "$repo" status --porcelain -- CMakeLists.txt include src 2>/dev/null)" ] || c=$c-dirty
    echo "$c"
}

phase_build() {
    local commit
    commit=$(source_commit)
    if [ "${E2E_BUILD:-1}" = 0 ] && "$engine" image inspect "$VAULTGATE_IMAGE" >/dev/null 2>&1; then
        log "reusing $VAULTGATE_IMAGE"
    else
        log "building $VAULTGATE_IMAGE at $commit (nice $build_nice, $build_jobs jobs)"
        nice -n "$build_nice" "$engine" build -f "$repo/docker/Dockerfile" -t "$VAULTGATE_IMAGE" \
            --build-arg VAULTGATE_COMMIT="$commit" --build-arg BUILD_JOBS="$build_jobs" "$repo" \
            >"$work/build.log" 2>&1 || die "image build failed: $(tail -n 5 "$work/build.log")"
    fi
    log "building $SANDBOX_IMAGE"
    "$engine" build -f "$e2e_dir/Dockerfile.client" -t "$SANDBOX_IMAGE" "$e2e_dir" >"$work/client.log" 2>&1 ||
        die "client image build failed: $(tail -n 5 "$work/client.log")"
}

# --- the compose stack ---------------------------------------------------------

compose_files=(-f "$repo/docker/compose.yaml" -f "$e2e_dir/compose.e2e.yaml")
dc() { "${compose[@]}" -p "$project" "${compose_files[@]}" "$@"; }
# The container of a compose service (both engines label it).
ctr() {
    "$engine" ps -a -q --filter "label=com.docker.compose.project=$project" \
        --filter "label=com.docker.compose.service=$1" | head -n 1
}
sandbox() { "$engine" exec "$(ctr sandbox)" "$@"; }
# wait_for SECONDS COMMAND...: polls the command once a second until it succeeds.
wait_for() {
    local deadline=$((SECONDS + $1))
    shift
    until "$@" >/dev/null 2>&1; do
        [ $SECONDS -lt $deadline ] || return 1
        sleep 1
    done
}

# Test material in $E2E_DIR: the origin's CA and certificate, the secrets
# (owned by the image's uid 10001, mode 0400, as docker/secrets/README.md says).
make_material() {
    local o=$E2E_DIR/origin
    rm -rf "$E2E_DIR"
    install -d -m 0755 "$E2E_DIR" "$o"
    install -d -m 0700 "$E2E_DIR/secrets"
    cp "$e2e_dir/origin.py" "$o/"
    openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj "/CN=vaultgate e2e origin CA" \
        -keyout "$work/origin-ca-key.pem" -out "$o/origin-ca.pem" 2>/dev/null &&
        openssl req -newkey rsa:2048 -nodes -subj "/CN=backend.composio.dev" \
            -keyout "$o/origin-key.pem" -out "$work/origin.csr" 2>/dev/null &&
        printf 'subjectAltName=DNS:backend.composio.dev\nextendedKeyUsage=serverAuth\n' >"$work/origin.ext" &&
        openssl x509 -req -in "$work/origin.csr" -CA "$o/origin-ca.pem" -CAkey "$work/origin-ca-key.pem" \
            -CAcreateserial -days 2 -extfile "$work/origin.ext" -out "$o/origin.pem" 2>/dev/null ||
        die "openssl failed"
    chmod 0644 "$o"/*
    secret="sk-e2e-$(openssl rand -hex 20)"
    (umask 077 && head -c 32 /dev/urandom >"$E2E_DIR/secrets/vaultgate_master_key" &&
        printf '%s' "$secret" >"$E2E_DIR/secrets/composio_api_key")
    chown 10001:10001 "$E2E_DIR/secrets"/* && chmod 0400 "$E2E_DIR/secrets"/*
}

# write_gateway_config ORIGIN_IP [SOURCE DEST]: a shipped container config
# (vaultgate.compose.yaml) with the upstream section pointed at the origin.
write_gateway_config() {
    local origin_ip=$1 src=${2:-$repo/docker/vaultgate.compose.yaml} dest=${3:-$E2E_DIR/vaultgate.e2e.yaml}
    sed -e "s|^  ca_file: system.*|  ca_file: /etc/vaultgate/origin-ca.pem|" \
        -e "s|^  resolve: {}.*|  resolve: { backend.composio.dev: $origin_ip }|" \
        "$src" >"$dest"
    grep -q "backend.composio.dev: $origin_ip" "$dest" &&
        grep -q 'ca_file: /etc/vaultgate/origin-ca.pem' "$dest" ||
        die "could not rewrite the upstream section of ${src#"$repo/"}"
    chmod 0644 "$dest"
}

healthy() {
    if [ "$engine" = podman ]; then
        # Nothing schedules podman's health checks without systemd: run it.
        podman healthcheck run "$(ctr vaultgate)"
    else
        [ "$(docker inspect -f '{{.State.Health.Status}}' "$(ctr vaultgate)")" = healthy ]
    fi
}

phase_up() {
    make_material
    log "starting the origin"
    dc up -d origin >"$work/up-origin.log" 2>&1 || die "compose up origin failed: $(tail -n 5 "$work/up-origin.log")"
    local origin_ip
    origin_ip=$("$engine" inspect -f '{{range .NetworkSettings.Networks}}{{.IPAddress}} {{end}}' "$(ctr origin)" | awk '{print $1}')
    [ -n "$origin_ip" ] || die "origin has no address"
    write_gateway_config "$origin_ip"
    log "starting the gateway (origin at $origin_ip)"
    if [ "$engine" = podman ]; then
        # podman-compose 1.0.3 starts services in order but ignores depends_on
        # conditions: run the one-shot init to its end first.
        dc up -d vaultgate-init >"$work/up-init.log" 2>&1 || die "compose up vaultgate-init failed: $(tail -n 5 "$work/up-init.log")"
        [ "$(podman wait "$(ctr vaultgate-init)")" = 0 ] || die "vaultgate-init failed: $(podman logs "$(ctr vaultgate-init)" 2>&1 | tail -n 5)"
    fi
    dc up -d >"$work/up.log" 2>&1 || die "compose up failed: $(tail -n 5 "$work/up.log")"
    wait_for 60 healthy || fail "the gateway becomes healthy" "$("$engine" logs "$(ctr vaultgate)" 2>&1 | tail -n 5)"
    wait_for 30 sandbox true || die "the sandbox does not run"
}

# --- what the gateway promises, proven from the sandbox -------------------------

# curl in the sandbox through the proxy with the sandbox's own environment
# (HTTPS_PROXY, CURL_CA_BUNDLE = the bundle vaultgate-init published) and its
# placeholder as the key.
sandbox_curl() {
    sandbox sh -c 'curl -sS --max-time 20 -H "x-api-key: $COMPOSIO_API_KEY" "$@"' curl "$@"
}

test_image() {
    local size version
    size=$("$engine" image inspect -f '{{.Size}}' "$VAULTGATE_IMAGE")
    log "image size: $((size / 1000000)) MB"
    check "image is under 150 MB ($((size / 1000000)) MB)" test "$size" -lt 150000000
    version=$("$engine" run --rm --network none "$VAULTGATE_IMAGE" --version 2>&1)
    log "vaultgate --version: $version"
    check "vaultgate --version prints version and commit ($version)" \
        grep -Eq "^vaultgate [0-9]+\.[0-9]+\.[0-9]+ \(commit [0-9a-f]{7,}(-dirty)?\)$" <<<"$version"
    [ "${E2E_BUILD:-1}" = 0 ] || check "the commit is the sources' ($(source_commit))" \
        test "$version" != "${version%"(commit $(source_commit))"}"
}

test_hardening() {
    local gw
    gw=$(ctr vaultgate)
    local out
    out=$("$engine" exec "$gw" touch /etc/vaultgate/probe 2>&1)
    check "gateway root file system is read-only" grep -q 'Read-only file system' <<<"$out"
    check "gateway runs as uid 10001" test "$("$engine" exec "$gw" id -u)" = 10001
    out=$("$engine" exec "$gw" grep -E '^Cap(Inh|Prm|Eff|Bnd|Amb):' /proc/1/status 2>&1)
    check "gateway has no capabilities" \
        test "$(grep -c '[[:space:]]0000000000000000$' <<<"$out")" = 5
    check "gateway has no_new_privs" sh -c "$engine exec $gw grep -q '^NoNewPrivs:[[:space:]]*1' /proc/1/status"
    check "gateway nofile limit is VAULTGATE_NOFILE ($VAULTGATE_NOFILE)" \
        sh -c "$engine exec $gw grep -E '^Max open files +$VAULTGATE_NOFILE +$VAULTGATE_NOFILE ' /proc/1/limits"
}

test_sandbox() {
    local secret secret_sha out
    secret=$(cat "$E2E_DIR/secrets/composio_api_key")
    secret_sha=$(printf '%s' "$secret" | sha256sum | cut -d' ' -f1)

    check "health check passes" healthy

    out=$(sandbox_curl https://backend.composio.dev/key 2>&1)
    check "curl: origin receives the real key for the placeholder" test "$out" = "sha256=$secret_sha"

    out=$(sandbox python3 -c '
import os, urllib.request
req = urllib.request.Request("https://backend.composio.dev/key", headers={"x-api-key": os.environ["COMPOSIO_API_KEY"]})
print(urllib.request.urlopen(req, timeout=20).read().decode().strip())' 2>&1)
    check "python3 urllib: origin receives the real key for the placeholder" test "$out" = "sha256=$secret_sha"

    out=$(sandbox_curl https://backend.composio.dev/echo 2>&1)
    check "the key echoed by the origin comes back as the placeholder ($out)" \
        test "$out" = vaultgate-placeholder-COMPOSIO_API_KEY

    out=$(sandbox curl -sS --max-time 20 -o /dev/null -w '%{http_connect}' https://example.com/ 2>/dev/null)
    check "CONNECT to a host outside the policy gets 403 (got $out)" test "$out" = 403
    out=$(sandbox curl -sS --max-time 20 -o /dev/null -w '%{http_code}' http://example.com/ 2>/dev/null)
    check "plain HTTP to a host outside the policy gets 403 (got $out)" test "$out" = 403

    local origin_ip
    origin_ip=$(awk '/backend.composio.dev:/ { sub(/ *}.*/, ""); print $NF }' "$E2E_DIR/vaultgate.e2e.yaml")
    check "sandbox has no default route" sandbox sh -c '! grep -qE "^[^[:space:]]+[[:space:]]+00000000[[:space:]]" /proc/net/route'
    out=$(sandbox curl -sS --noproxy '*' --max-time 10 -k "https://$origin_ip/key" 2>&1)
    check "direct connection to the origin without the proxy fails ($out)" \
        sh -c "! printf '%s' \"\$1\" | grep -q sha256 && printf '%s' \"\$1\" | grep -Eqi 'unreachable|no route|timed out|failed to connect'" _ "$out"
    out=$(sandbox python3 -c '
import socket
s = socket.socket(); s.settimeout(10)
try:
    s.connect(("1.1.1.1", 443)); print("connected")
except OSError as e:
    print(e)' 2>&1)
    check "direct connection to the internet without the proxy fails ($out)" \
        sh -c "printf '%s' \"\$1\" | grep -Eqi 'unreachable|no route|timed out'" _ "$out"

    check "the key is not in the sandbox environment" sh -c "! $engine exec $(ctr sandbox) env | grep -qF -- \"\$1\"" _ "$secret"
    check "the key is in no file of the sandbox" \
        sh -c "! $engine exec $(ctr sandbox) grep -rlsF --exclude-dir=proc --exclude-dir=sys --exclude-dir=dev -- \"\$1\" / >/dev/null" _ "$secret"
}

# SIGTERM via `stop` while a request is in flight: it completes, then the
# gateway exits 0.
test_drain() {
    local gw secret_sha out rc=0
    gw=$(ctr vaultgate)
    secret_sha=$(sha256sum <"$E2E_DIR/secrets/composio_api_key" | cut -d' ' -f1)
    sandbox_curl 'https://backend.composio.dev/slow?s=4' >"$work/slow.out" 2>&1 &
    local curl_pid=$!
    if ! wait_for 20 sh -c "$engine logs $(ctr origin) 2>&1 | grep -q 'slow request started'"; then
        fail "the slow request reaches the origin"
        wait "$curl_pid"
        return
    fi
    "$engine" stop -t 30 "$gw" >/dev/null 2>&1
    wait "$curl_pid" || rc=$?
    out=$(cat "$work/slow.out")
    check "$engine stop drains the in-flight request (curl exit $rc)" test "$out" = "sha256=$secret_sha"
    check "gateway exits 0 after draining" \
        test "$("$engine" inspect -f '{{.State.ExitCode}}' "$gw")" = 0
    check "gateway logs the drain" sh -c "$engine logs $gw 2>&1 | grep -qi 'drain'"
}

test_logs() {
    local secret c name
    secret=$(cat "$E2E_DIR/secrets/composio_api_key")
    for c in $("$engine" ps -a -q --filter "label=com.docker.compose.project=$project"); do
        name=$("$engine" inspect -f '{{.Name}}' "$c")
        check "the key is not in the logs of ${name#/}" sh -c "! $engine logs $c 2>&1 | grep -qF -- \"\$1\"" _ "$secret"
    done
}

phase_test() {
    test_image
    test_hardening
    test_sandbox
    test_drain
    test_logs
}

# --- config/vaultgate.service under systemd as PID 1 -----------------------------

sd_ctr=${E2E_SYSTEMD_CONTAINER:-vaultgate-e2e-systemd}
sd() { podman exec "$sd_ctr" "$@"; }
sdi() { podman exec -i "$sd_ctr" "$@"; }
sd_journal() { sd journalctl -u vaultgate.service -o cat --no-pager; }

# The unit's config with a TCP admin listener and a token credential (so that
# both credentials the unit can load are exercised) and the upstream pinned to
# an origin inside the container.
write_systemd_config() {
    sed -e 's|^  admin: unix:/run/vaultgate/admin.sock.*|  admin: 127.0.0.1:3190|' \
        -e 's|^  token_file: null.*|  token_file: /run/credentials/vaultgate.service/admin-token|' \
        -e 's|^  ca_file: system.*|  ca_file: /etc/vaultgate/origin-ca.pem|' \
        -e 's|^  resolve: {}.*|  resolve: { backend.composio.dev: 127.0.0.1 }|' \
        "$repo/config/vaultgate.systemd.yaml" >"$1"
    [ "$(grep -c -e '^  admin: 127.0.0.1:3190' -e '^  token_file: /run/credentials/vaultgate.service/admin-token' \
        -e '^  ca_file: /etc/vaultgate/origin-ca.pem' -e '^  resolve: { backend.composio.dev: 127.0.0.1 }' "$1")" = 4 ] ||
        die "could not rewrite config/vaultgate.systemd.yaml"
}

phase_systemd() {
    [ "$engine" = podman ] || { log "systemd: needs podman (--systemd=always); skipped"; return 0; }
    local ctx=$work/systemd gw_img state
    [ -f "$E2E_DIR/origin/origin.pem" ] || make_material
    rm -rf "$ctx" && install -d "$ctx"
    # The binary from the image just built (or E2E_VAULTGATE_BIN, one built on
    # this Debian 12 host), with the unit and its config as shipped.
    if [ -n "${E2E_VAULTGATE_BIN:-}" ]; then
        cp "$E2E_VAULTGATE_BIN" "$ctx/vaultgate" || die "no binary at E2E_VAULTGATE_BIN=$E2E_VAULTGATE_BIN"
    else
        gw_img=$(podman create "$VAULTGATE_IMAGE") && podman cp "$gw_img:/usr/local/bin/vaultgate" "$ctx/vaultgate" &&
            podman rm "$gw_img" >/dev/null || die "could not copy vaultgate out of $VAULTGATE_IMAGE"
    fi
    cp "$repo/config/vaultgate.service" "$e2e_dir/Dockerfile.systemd" "$ctx/"
    write_systemd_config "$ctx/vaultgate.yaml"
    podman build -f "$ctx/Dockerfile.systemd" -t vaultgate-e2e-systemd:local "$ctx" >"$work/systemd-build.log" 2>&1 ||
        die "systemd image build failed: $(tail -n 5 "$work/systemd-build.log")"
    podman rm -f "$sd_ctr" >/dev/null 2>&1
    # The unit's LimitNOFILE=65536 needs that much room in the container: a
    # lower hard limit here is lifted by a drop-in, below.
    if ! podman run -d --name "$sd_ctr" --systemd=always --network none \
        --ulimit "nofile=$VAULTGATE_NOFILE:$VAULTGATE_NOFILE" --ulimit "nproc=$VAULTGATE_NPROC:$VAULTGATE_NPROC" \
        vaultgate-e2e-systemd:local >"$work/systemd-run.log" 2>&1; then
        fail "systemd runs as the container's PID 1" "$(cat "$work/systemd-run.log")"
        return
    fi
    wait_for 60 sh -c "podman exec $sd_ctr systemctl is-system-running | grep -Eq '^(running|degraded)$'"
    state=$(sd systemctl is-system-running 2>&1)
    check "systemd runs as the container's PID 1 ($state)" \
        sh -c "[ \"\$(podman exec $sd_ctr cat /proc/1/comm)\" = systemd ] && echo '$state' | grep -Eq '^(running|degraded)$'"

    # The files of the unit's install comment, plus the origin and its CA.
    local secret token
    secret="sk-e2e-$(openssl rand -hex 20)"
    token=$(openssl rand -hex 24)
    sd sh -c 'umask 077 && head -c 32 /dev/urandom > /etc/vaultgate/master.key'
    printf '%s' "$secret" | sdi sh -c 'umask 077 && cat > /etc/vaultgate/composio-api-key'
    printf '%s' "$token" | sdi sh -c 'umask 077 && cat > /etc/vaultgate/admin.token'
    sd mkdir -p /origin && podman cp "$E2E_DIR/origin/." "$sd_ctr:/origin/"
    podman cp "$E2E_DIR/origin/origin-ca.pem" "$sd_ctr:/etc/vaultgate/origin-ca.pem"
    sd install -d /etc/systemd/system/vaultgate.service.d
    printf '[Service]\nLoadCredential=admin-token:/etc/vaultgate/admin.token\n' |
        sdi sh -c 'cat > /etc/systemd/system/vaultgate.service.d/admin-token.conf'
    if [ "$VAULTGATE_NOFILE" -lt 65536 ]; then
        # Without CAP_SYS_RESOURCE, systemd cannot raise a hard limit.
        printf '[Service]\nLimitNOFILE=%s\n' "$VAULTGATE_NOFILE" |
            sdi sh -c 'cat > /etc/systemd/system/vaultgate.service.d/nofile.conf'
    fi
    sd systemd-run --unit=origin --quiet python3 /origin/origin.py /origin/origin.pem /origin/origin-key.pem
    sd systemctl daemon-reload

    # Type=notify: `systemctl start` returns once vaultgate sent READY=1, so
    # the listeners answer at once, with no retry.
    if ! sd systemctl start vaultgate >"$work/systemd-start.log" 2>&1; then
        fail "systemctl start vaultgate succeeds" "$(sd_journal | tail -n 8)"
        podman rm -f "$sd_ctr" >/dev/null 2>&1
        return
    fi
    pass "systemctl start vaultgate succeeds"
    local admin=(curl -sS --max-time 10 -o /dev/null -w '%{http_code}')
    check "Type=notify: the admin listener answers as soon as start returns" \
        test "$(sd "${admin[@]}" http://127.0.0.1:3190/healthz)" = 200
    check "Type=notify: the unit is active/running" \
        test "$(sd systemctl show -P ActiveState,SubState vaultgate | tr '\n' ' ')" = "active running "
    check "LoadCredential admin-token: the token is accepted, its absence gets 401" \
        test "$(sd "${admin[@]}" -H "Authorization: Bearer $token" http://127.0.0.1:3190/v1/vaults) $(sd "${admin[@]}" http://127.0.0.1:3190/v1/vaults)" = "200 401"
    check "LoadCredential master-key: the store opens with the credential" \
        sd sh -c "VAULTGATE_ADMIN_TOKEN_FILE=/etc/vaultgate/admin.token vaultgate vault list --admin http://127.0.0.1:3190"
    local pid uid
    pid=$(sd systemctl show -P MainPID vaultgate)
    check "LoadCredential: the credentials are in /run/credentials/vaultgate.service" \
        sd sh -c "ls /run/credentials/vaultgate.service | tr '\n' ' ' | grep -q 'admin-token composio-api-key master-key'"
    uid=$(sd awk '/^Uid:/ { print $2 }' "/proc/$pid/status")
    check "DynamicUser: vaultgate runs as a dynamic uid ($uid, 61184-65519)" \
        test "$uid" -ge 61184 -a "$uid" -le 65519
    check "DynamicUser: the state directory belongs to that uid" \
        test "$(sd stat -c %u /var/lib/private/vaultgate)" = "$uid"

    local proxy=(curl -sS --max-time 20 --proxy http://127.0.0.1:3128 --cacert /var/lib/vaultgate/ca/ca.pem)
    check "the service injects the credential" \
        test "$(sd "${proxy[@]}" -H 'x-api-key: placeholder' https://backend.composio.dev/key)" = \
        "sha256=$(printf '%s' "$secret" | sha256sum | cut -d' ' -f1)"

    # Reload: a domain the policy refused is allowed after `systemctl reload`, same process.
    local before after
    before=$(sd "${proxy[@]}" -o /dev/null -w '%{http_connect}' https://www.example.org/ 2>/dev/null)
    sd sed -i 's|allowed_domains: \[backend.composio.dev\]|allowed_domains: [backend.composio.dev, www.example.org]|' \
        /etc/vaultgate/vaultgate.yaml
    check "systemctl reload succeeds" sd systemctl reload vaultgate
    after=$(sd "${proxy[@]}" -o /dev/null -w '%{http_connect}' https://www.example.org/ 2>/dev/null)
    check "systemctl reload is SIGHUP: new policy (CONNECT $before, then $after), same PID" \
        sh -c "[ '$before' = 403 ] && [ '$after' != 403 ] && [ \"\$(podman exec $sd_ctr systemctl show -P MainPID vaultgate)\" = '$pid' ]"

    # Stop while a request is in flight: it completes, the unit stops cleanly.
    sd sh -c "${proxy[*]} -H 'x-api-key: placeholder' 'https://backend.composio.dev/slow?s=4' > /tmp/slow.out 2>&1" &
    local curl_pid=$!
    if ! wait_for 20 sh -c "podman exec $sd_ctr journalctl -u origin -o cat | grep -q 'slow request started'"; then
        fail "the slow request reaches the origin (systemd)"
        wait "$curl_pid"
        podman rm -f "$sd_ctr" >/dev/null 2>&1
        return
    fi
    check "systemctl stop vaultgate succeeds" sd systemctl stop vaultgate
    wait "$curl_pid"
    check "systemctl stop drains the in-flight request" \
        test "$(sd cat /tmp/slow.out)" = "sha256=$(printf '%s' "$secret" | sha256sum | cut -d' ' -f1)"
    check "the unit stopped cleanly (Result=success)" test "$(sd systemctl show -P Result vaultgate)" = success
    check "the journal shows the drain" sh -c "podman exec $sd_ctr journalctl -u vaultgate -o cat | grep -qi draining"
    check "the key is not in the journal" sh -c "! podman exec $sd_ctr journalctl -o cat | grep -qF -- \"\$1\"" _ "$secret"

    sd systemd-analyze security --no-pager vaultgate.service >"$work/systemd-security.txt" 2>&1
    log "systemd-analyze security vaultgate.service: $(tail -n 1 "$work/systemd-security.txt")"
    grep -E '^✗' "$work/systemd-security.txt" | sed 's/^/   /' >&2
    check "systemd-analyze security rates the unit OK or better" \
        grep -Eq 'Overall exposure level for vaultgate.service: [0-9.]+ (OK|SAFE)' "$work/systemd-security.txt"
    [ "${E2E_KEEP:-0}" = 1 ] || podman rm -f "$sd_ctr" >/dev/null 2>&1
}

# The containers, volumes and networks of $project.
compose_down() {
    local ids
    dc down -v >>"$work/down.log" 2>&1
    ids=$("$engine" ps -a -q --filter "label=com.docker.compose.project=$project")
    [ -z "$ids" ] || "$engine" rm -f $ids >/dev/null 2>&1
    ids=$("$engine" volume ls -q --filter "label=com.docker.compose.project=$project")
    [ -z "$ids" ] || "$engine" volume rm -f $ids >/dev/null 2>&1
    ids=$("$engine" network ls -q --filter "label=com.docker.compose.project=$project")
    [ -z "$ids" ] || "$engine" network rm $ids >/dev/null 2>&1
}

phase_down() {
    command -v "$engine" >/dev/null || { rm -rf "$work"; return 0; }
    compose_down
    replicas_down
    [ "$engine" = podman ] && podman rm -f "$sd_ctr" >/dev/null 2>&1
    rm -rf "$work"
}

# The replicas step: docker/compose.replicas.yaml on PostgreSQL.
# shellcheck source=docker/e2e/replicas.sh
. "$e2e_dir/replicas.sh"

main() {
    [ "$(id -u)" = 0 ] || die "run as root"
    pick_engine
    # The compose file's nofile ulimit: its default (65536), or this shell's
    # hard limit where that is lower (podman cannot raise it; Docker's daemon
    # has its own, usually 1048576).
    local hard
    hard=$(ulimit -Hn)
    if [ "$engine" = podman ] && [ "$hard" != unlimited ] && [ "$hard" -lt 65536 ]; then
        export VAULTGATE_NOFILE=${VAULTGATE_NOFILE:-$hard}
    fi
    hard=$(ulimit -Hu)
    if [ "$engine" = podman ] && [ "$hard" != unlimited ] && [ "$hard" -lt 32768 ]; then
        export VAULTGATE_NPROC=${VAULTGATE_NPROC:-$hard}
    fi
    export VAULTGATE_NOFILE=${VAULTGATE_NOFILE:-65536} VAULTGATE_NPROC=${VAULTGATE_NPROC:-32768}
    local step=${1:-all}
    mkdir -p "$work"
    case $step in
    setup) phase_setup ;;
    build) phase_build ;;
    up) phase_up ;;
    test) phase_test ;;
    systemd) phase_systemd ;;
    replicas) phase_replicas ;;
    down) phase_down ;;
    all)
        phase_down
        mkdir -p "$work"
        phase_setup
        phase_build
        [ "${E2E_KEEP:-0}" = 1 ] || on_die=phase_down
        phase_up
        phase_test
        phase_systemd
        [ "${E2E_KEEP:-0}" = 1 ] || compose_down
        phase_replicas
        [ "${E2E_KEEP:-0}" = 1 ] || phase_down
        ;;
    *) die "unknown step $step" ;;
    esac
    printf '%s passed, %s failed\n' "$passed" "$failed"
    [ "$failed" = 0 ]
}

main "$@"
