# shellcheck shell=bash disable=SC2154,SC2034  # globals of container-e2e.sh, set in its scope
# The `replicas` step of scripts/container-e2e.sh, which sources this file:
# docker/compose.replicas.yaml run for real, two gateway replicas on one
# PostgreSQL (docker/e2e/Dockerfile.postgres) behind one sandbox network, and
# proven from the sandbox and the replicas' admin sockets: the key injected
# through each replica, a session and a rotation made through one replica in
# force through the other, a revocation refused on both, a database outage
# served from the snapshot (writes 503, /readyz degraded) and the catch-up
# after it. Uses the helpers of container-e2e.sh (dc, ctr, check, wait_for...).

replicas_project=vaultgate-e2e-replicas
replicas_files=(-f "$repo/docker/compose.yaml" -f "$repo/docker/compose.replicas.yaml"
    -f "$e2e_dir/compose.e2e.yaml" -f "$e2e_dir/compose.replicas.e2e.yaml")
export POSTGRES_IMAGE=${POSTGRES_IMAGE:-vaultgate-e2e-postgres:local}

# The replicas' own compose project and scratch directory, for the functions
# called from the one that runs this (bash scopes `local` dynamically).
replicas_scope() {
    project=$replicas_project
    compose_files=("${replicas_files[@]}")
    E2E_DIR=$work/replicas
}

replicas_down() {
    local project compose_files E2E_DIR
    replicas_scope
    export E2E_DIR
    compose_down
    rm -rf "$E2E_DIR"
}

# --- the stack -----------------------------------------------------------------

# PostgreSQL 15 from Debian's package: Docker Hub may not be reachable.
replicas_build() {
    [ "$POSTGRES_IMAGE" = vaultgate-e2e-postgres:local ] || return 0
    log "building $POSTGRES_IMAGE"
    "$engine" build -f "$e2e_dir/Dockerfile.postgres" -t "$POSTGRES_IMAGE" "$e2e_dir" >"$work/postgres.log" 2>&1 ||
        die "postgres image build failed: $(tail -n 5 "$work/postgres.log")"
}

# The database password (read by the postgres entrypoint as root) and the
# replicas' libpq password file: owned by uid 10001, mode 0400 (libpq ignores
# a password file open to group or others).
make_db_secrets() {
    local s=$E2E_DIR/secrets
    (umask 077 && head -c 24 /dev/urandom | base64 >"$s/vaultgate_db_password" &&
        printf 'postgres:5432:vaultgate:vaultgate:%s\n' "$(cat "$s/vaultgate_db_password")" >"$s/vaultgate_pgpass")
    chown 0:0 "$s/vaultgate_db_password" && chown 10001:10001 "$s/vaultgate_pgpass" &&
        chmod 0400 "$s/vaultgate_db_password" "$s/vaultgate_pgpass" || die "db secrets failed"
}

service_healthy() {
    if [ "$engine" = podman ]; then
        podman healthcheck run "$(ctr "$1")"
    else
        [ "$(docker inspect -f '{{.State.Health.Status}}' "$(ctr "$1")")" = healthy ]
    fi
}

replicas_up() {
    make_material
    make_db_secrets
    log "starting the origin"
    dc up -d origin >"$work/up-origin.log" 2>&1 || die "compose up origin failed: $(tail -n 5 "$work/up-origin.log")"
    local origin_ip
    origin_ip=$("$engine" inspect -f '{{range .NetworkSettings.Networks}}{{.IPAddress}} {{end}}' "$(ctr origin)" | awk '{print $1}')
    [ -n "$origin_ip" ] || die "origin has no address"
    write_gateway_config "$origin_ip" "$repo/docker/vaultgate.replicas.yaml" "$E2E_DIR/vaultgate.replicas.e2e.yaml"
    if [ "$engine" = podman ]; then
        # podman-compose 1.0.3 ignores depends_on conditions: the database
        # healthy, then the one-shot init to its end, before the replicas.
        dc up -d postgres >"$work/up-postgres.log" 2>&1 || die "compose up postgres failed: $(tail -n 5 "$work/up-postgres.log")"
        wait_for 120 service_healthy postgres || die "postgres is not healthy: $(podman logs "$(ctr postgres)" 2>&1 | tail -n 5)"
        dc up -d vaultgate-init >"$work/up-init.log" 2>&1 || die "compose up vaultgate-init failed: $(tail -n 5 "$work/up-init.log")"
        [ "$(podman wait "$(ctr vaultgate-init)")" = 0 ] || die "vaultgate-init failed: $(podman logs "$(ctr vaultgate-init)" 2>&1 | tail -n 5)"
    fi
    log "starting two replicas on one database (origin at $origin_ip)"
    dc up -d >"$work/up.log" 2>&1 || die "compose up failed: $(tail -n 5 "$work/up.log")"
    local r
    for r in vaultgate vaultgate-b; do
        wait_for 60 service_healthy "$r" || fail "$r becomes healthy" "$("$engine" logs "$(ctr "$r")" 2>&1 | tail -n 5)"
    done
    wait_for 30 sandbox true || die "the sandbox does not run"
}

# --- clients -------------------------------------------------------------------

# admin REPLICA ARGS...: vaultgate's admin client in the replica, as its uid
# 10001, on its own unix socket; stdin passed on (credential values).
admin() {
    local r=$1
    shift
    "$engine" exec -i "$(ctr "$r")" vaultgate "$@" --admin unix:/run/vaultgate/admin.sock
}

# admin_http REPLICA METHOD PATH [JSON]: "STATUS BODY" of a request on the
# replica's admin socket (the image has no curl; its perl-base has a unix
# socket client), to see status codes the CLI does not print.
admin_http() {
    "$engine" exec "$(ctr "$1")" perl -MIO::Socket::UNIX -e '
        my ($method, $path, $body) = @ARGV;
        my $s = IO::Socket::UNIX->new(Peer => "/run/vaultgate/admin.sock") or die "connect: $!\n";
        my $head = "$method $path HTTP/1.1\r\nHost: admin\r\nConnection: close\r\n";
        $head .= "Content-Type: application/json\r\nContent-Length: " . length($body) . "\r\n" if length $body;
        print $s "$head\r\n$body";
        local $/; my $r = <$s>;
        my ($status) = $r =~ m{^HTTP/1\.[01] (\d{3})}; my ($answer) = $r =~ m{\r\n\r\n(.*)\z}s;
        print "$status $answer";' "$2" "$3" "${4:-}"
}
admin_get() { admin_http "$1" GET "$2"; }
readyz_is() { admin_get "$1" /readyz | grep -q "\"status\":\"$2\""; }

# The replica's address on sandbox_net, so that a request goes to it alone.
replica_ip() {
    "$engine" inspect -f "{{(index .NetworkSettings.Networks \"${project}_sandbox_net\").IPAddress}}" "$(ctr "$1")"
}

# via IP AUTH: the stand-in origin's answer (the SHA-256 of the key it got) to
# the sandbox's request through the replica at IP, with the session AUTH
# ("id:token") or, empty, the default session.
via() {
    sandbox sh -c 'curl -sS --max-time 20 --proxy "$1" -H "x-api-key: $COMPOSIO_API_KEY" https://backend.composio.dev/key' \
        curl "http://${2:+$2@}$1:3128"
}
# connect_status IP AUTH: the proxy's answer to CONNECT (407 for a refused session).
connect_status() {
    sandbox curl -sS --max-time 20 --proxy "http://${2:+$2@}$1:3128" -o /dev/null -w '%{http_connect}' \
        https://backend.composio.dev/key 2>/dev/null
}
connect_status_is() { [ "$(connect_status "$2" "$3")" = "$1" ]; }
# poll_via IP AUTH WANT SECONDS: in the sandbox, repeats the request until the
# answer is WANT; prints "polling" after the first answer, then the clock
# (seconds.nanoseconds) at the first WANT. Exits 1 after SECONDS.
poll_via() {
    sandbox sh -c '
        end=$(($(date +%s) + $3)) first=1
        while :; do
            out=$(curl -sS --max-time 5 --proxy "$1" -H "x-api-key: $COMPOSIO_API_KEY" https://backend.composio.dev/key 2>&1)
            [ "$out" = "$2" ] && { date +%s.%N; exit 0; }
            [ -z "$first" ] || { echo polling; first=; }
            [ "$(date +%s)" -lt "$end" ] || { echo "last answer: $out"; exit 1; }
        done' poll "http://${2:+$2@}$1:3128" "$3" "$4"
}
sha() { printf 'sha256=%s' "$(printf '%s' "$1" | sha256sum | cut -d' ' -f1)"; }
# json_field NAME: a string field of one-line JSON on stdin.
json_field() { sed -n "s/.*\"$1\":\"\\([^\"]*\\)\".*/\\1/p"; }
ms_between() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%d", (b - a) * 1000 }'; }

# --- what the replicas promise ---------------------------------------------------

replicas_test() {
    local ip_a ip_b key v1 v2 v3 out
    ip_a=$(replica_ip vaultgate) ip_b=$(replica_ip vaultgate-b)
    key=$(cat "$E2E_DIR/secrets/composio_api_key")
    v1="sk-rep-$(openssl rand -hex 20)" v2="sk-rep-$(openssl rand -hex 20)" v3="sk-rep-$(openssl rand -hex 20)"
    log "replica A at $ip_a, replica B at $ip_b (sandbox_net)"
    check "two replicas with their own addresses on sandbox_net ($ip_a, $ip_b)" \
        sh -c "[ -n '$ip_a' ] && [ -n '$ip_b' ] && [ '$ip_a' != '$ip_b' ]"

    local r
    for r in vaultgate vaultgate-b; do
        check "$r: health check passes" service_healthy "$r"
        out=$(admin_get "$r" /readyz 2>&1)
        check "$r: /readyz is ready ($out)" test "$out" = '200 {"status":"ready","store":"ok"}'
    done
    check "the config vault's key is injected through replica A" test "$(via "$ip_a" "")" = "$(sha "$key")"
    check "the config vault's key is injected through replica B" test "$(via "$ip_b" "")" = "$(sha "$key")"

    # A vault and a session made through A's admin socket, used through B.
    admin vaultgate vault create shared >/dev/null &&
        printf '%s' "$v1" | admin vaultgate vault add-credential shared API_KEY --value-file - >/dev/null &&
        admin vaultgate vault add-service shared --host backend.composio.dev --auth api-key --key API_KEY >/dev/null ||
        fail "a vault with a credential and a service made through replica A"
    local s1 s1_auth s2 s2_auth
    s1=$(admin vaultgate session create --vault shared --policy default --json 2>&1)
    s1_auth="$(json_field id <<<"$s1"):$(json_field token <<<"$s1")"
    out=$(via "$ip_b" "$s1_auth")
    check "a session made through A's admin works through B (the origin gets A's credential)" test "$out" = "$(sha "$v1")"
    check "the same session works through A" test "$(via "$ip_a" "$s1_auth")" = "$(sha "$v1")"

    # A rotation through B, in force through A within 1 s: the poller is
    # running (its first answer is in) before the rotation starts.
    local t0 t1 t_seen
    poll_via "$ip_a" "$s1_auth" "$(sha "$v2")" 10 >"$work/poll-rotate.out" 2>&1 &
    local poll_pid=$!
    wait_for 15 grep -q polling "$work/poll-rotate.out"
    t0=$(date +%s.%N)
    printf '%s' "$v2" | admin vaultgate-b vault rotate shared API_KEY --value-file - >"$work/rotate.out" 2>&1 ||
        fail "rotation through replica B" "$(cat "$work/rotate.out")"
    t1=$(date +%s.%N)
    if wait "$poll_pid"; then
        t_seen=$(tail -n 1 "$work/poll-rotate.out")
        check "a rotation through B is in force through A within 1 s ($(ms_between "$t0" "$t_seen") ms from the rotate command's start, $(ms_between "$t1" "$t_seen") ms after it returned)" \
            test "$(ms_between "$t0" "$t_seen")" -lt 1000
    else
        fail "a rotation through B is in force through A within 10 s" "$(tail -n 2 "$work/poll-rotate.out")"
    fi
    check "the rotated credential is in force through B" test "$(via "$ip_b" "$s1_auth")" = "$(sha "$v2")"

    # A revocation through A: the session is refused on both.
    s2=$(admin vaultgate-b session create --vault shared --policy default --json 2>&1)
    s2_auth="$(json_field id <<<"$s2"):$(json_field token <<<"$s2")"
    check "session 1 deleted through A" admin vaultgate session delete "${s1_auth%%:*}"
    check "the revoked session is refused by A (407)" wait_for 5 connect_status_is 407 "$ip_a" "$s1_auth"
    check "the revoked session is refused by B (407)" wait_for 5 connect_status_is 407 "$ip_b" "$s1_auth"
    check "a session made through B works through A" test "$(via "$ip_a" "$s2_auth")" = "$(sha "$v2")"

    replicas_outage "$ip_a" "$ip_b" "$s2_auth" "$v2" "$v3"

    # The dump must hold the vault (its name is not secret) for the absence
    # of the values to mean anything.
    "$engine" exec "$(ctr postgres)" pg_dump -U vaultgate vaultgate >"$work/dump.sql" 2>&1
    check "the database holds the vault, and no credential value in the clear ($(wc -l <"$work/dump.sql") dump lines)" \
        sh -c "grep -q shared \"\$1\" && ! grep -qF -e \"\$2\" -e \"\$3\" -e \"\$4\" \"\$1\"" _ "$work/dump.sql" "$v1" "$v2" "$v3"
    rm -f "$work/dump.sql"
    local c name
    for c in $("$engine" ps -a -q --filter "label=com.docker.compose.project=$project"); do
        name=$("$engine" inspect -f '{{.Name}}' "$c")
        check "no key or session token in the logs of ${name#/}" \
            sh -c "! $engine logs $c 2>&1 | grep -qF -e \"\$1\" -e \"\$2\" -e \"\$3\" -e \"\$4\" -e \"\$5\" -e \"\$6\"" _ \
            "$key" "$v1" "$v2" "$v3" "${s1_auth#*:}" "${s2_auth#*:}"
    done
}

# PostgreSQL stopped: both replicas serve from their snapshot, a write answers
# 503 store_unavailable, /readyz says degraded. Started again: writes work and
# both replicas catch up.
replicas_outage() {
    local ip_a=$1 ip_b=$2 auth=$3 v2=$4 v3=$5 pg out r
    pg=$(ctr postgres)
    log "stopping PostgreSQL"
    "$engine" stop -t 30 "$pg" >/dev/null 2>&1
    check "PostgreSQL is stopped" test "$("$engine" inspect -f '{{.State.Running}}' "$pg")" = false
    for r in vaultgate vaultgate-b; do
        check "$r: /readyz says degraded with the database down" wait_for 15 readyz_is "$r" degraded
        out=$(admin_get "$r" /healthz 2>&1)
        check "$r: /healthz stays 200 with the database down (${out%% *})" test "${out%% *}" = 200
    done
    check "database down: replica A serves the session from its snapshot" test "$(via "$ip_a" "$auth")" = "$(sha "$v2")"
    check "database down: replica B serves the session from its snapshot" test "$(via "$ip_b" "$auth")" = "$(sha "$v2")"
    for r in vaultgate vaultgate-b; do
        out=$(printf '%s' "$v3" | admin "$r" vault rotate shared API_KEY --value-file - 2>&1)
        log "$r, a rotation with the database down: $(head -n 1 <<<"$out")"
        check "database down: a rotation through $r is refused with store_unavailable" grep -q 'store_unavailable' <<<"$out"
        out=$(admin_http "$r" POST /v1/vaults '{"name":"made-while-down"}' 2>&1)
        check "database down: POST /v1/vaults through $r answers 503 store_unavailable (${out%% *})" \
            grep -q '^503 .*"code":"store_unavailable"' <<<"$out"
    done
    out="$(admin vaultgate vault list </dev/null 2>&1)"$'\n'"$(admin vaultgate-b vault list </dev/null 2>&1)"
    check "database down: both list the vault, neither one made-while-down" \
        sh -c "[ \"\$(printf '%s' \"\$1\" | grep -c shared)\" = 2 ] && ! printf '%s' \"\$1\" | grep -q made-while-down" _ "$out"

    log "starting PostgreSQL again"
    "$engine" start "$pg" >/dev/null 2>&1
    check "PostgreSQL is healthy again" wait_for 60 service_healthy postgres
    for r in vaultgate vaultgate-b; do
        check "$r: /readyz is ready again" wait_for 30 readyz_is "$r" ready
    done
    if out=$(printf '%s' "$v3" | admin vaultgate vault rotate shared API_KEY --value-file - 2>&1); then
        pass "after the outage a write (rotation) through A succeeds"
    else
        fail "after the outage a write (rotation) through A succeeds" "$out"
    fi
    check "after the outage B catches up (the new credential through B within 5 s)" poll_via "$ip_b" "$auth" "$(sha "$v3")" 5
    check "after the outage A serves the new credential" test "$(via "$ip_a" "$auth")" = "$(sha "$v3")"
}

phase_replicas() {
    local project compose_files E2E_DIR
    replicas_scope
    export E2E_DIR
    # Under `all`, on_die is already phase_down, which covers this step too.
    [ "${E2E_KEEP:-0}" = 1 ] || [ "$on_die" != : ] || on_die=replicas_down
    compose_down
    replicas_build
    replicas_up
    replicas_test
    [ "${E2E_KEEP:-0}" = 1 ] || replicas_down
}
