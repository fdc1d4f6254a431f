#!/bin/sh
# Entrypoint of docker/e2e/Dockerfile.postgres. Started as root: on the first
# start (an empty $PGDATA) it makes a cluster whose superuser is
# $POSTGRES_USER with the password of $POSTGRES_PASSWORD_FILE and a database
# $POSTGRES_DB, then runs the server as the postgres user, listening on every
# address with scram-sha-256 for network clients (local socket: trust, as in
# the official image, for pg_isready and a shell in the container).
set -eu

: "${PGDATA:=/var/lib/postgresql/data}"
user=${POSTGRES_USER:-postgres}
db=${POSTGRES_DB:-$user}
# Plain identifiers only: no quoting to get wrong in the SQL below.
for name in "$user" "$db"; do
    case $name in
    '' | [!a-z_]* | *[!a-z0-9_]*) echo "postgres-entrypoint: '$name' is not a plain lower-case identifier" >&2; exit 2 ;;
    esac
done
as_postgres() { setpriv --reuid=postgres --regid=postgres --init-groups "$@"; }

if [ "$(id -u)" != 0 ]; then
    echo "postgres-entrypoint: start as root (it drops to the postgres user)" >&2
    exit 2
fi
install -d -o postgres -g postgres -m 0700 "$PGDATA"
install -d -o postgres -g postgres -m 2775 /run/postgresql

if [ ! -s "$PGDATA/PG_VERSION" ]; then
    if [ -z "${POSTGRES_PASSWORD_FILE:-}" ] || [ ! -s "$POSTGRES_PASSWORD_FILE" ]; then
        echo "postgres-entrypoint: POSTGRES_PASSWORD_FILE must name a non-empty file" >&2
        exit 2
    fi
    # initdb reads the password as the postgres user, who may not read the secret.
    pwfile=$(mktemp)
    head -n 1 "$POSTGRES_PASSWORD_FILE" | tr -d '\r\n' >"$pwfile"
    chown postgres "$pwfile"
    as_postgres initdb --pgdata="$PGDATA" --username="$user" --pwfile="$pwfile" \
        --auth-local=trust --auth-host=scram-sha-256 --encoding=UTF8 --locale=C.UTF-8 >/dev/null
    rm -f "$pwfile"
    echo "host all all all scram-sha-256" >>"$PGDATA/pg_hba.conf"
    echo "listen_addresses = '*'" >>"$PGDATA/postgresql.conf"
    # Single-user mode: no listener yet, so pg_isready fails until the real start.
    if [ "$db" != postgres ]; then
        echo "CREATE DATABASE $db OWNER $user;" | as_postgres postgres --single -D "$PGDATA" -j postgres >/dev/null
    fi
    echo "postgres-entrypoint: cluster created in $PGDATA (user $user, database $db)"
fi

if [ "$1" = postgres ]; then
    exec setpriv --reuid=postgres --regid=postgres --init-groups "$@"
fi
exec "$@"
