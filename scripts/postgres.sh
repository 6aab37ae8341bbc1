#!/usr/bin/env bash
# A throwaway Postgres cluster for the journal's tests and CI: `start DIR` makes one in DIR (as
# the `postgres` user when run as root: the server refuses root), listening only on a socket in
# DIR, and prints its DSN; `stop DIR` stops it and removes DIR. Exit 1, saying why, when no
# server can be started (no Debian `postgresql` installed). DIR's parent folders must be
# reachable by the server's user (a folder of its own in /tmp is).
set -euo pipefail
cmd=${1:-}; dir=${2:-}
if [ -z "$cmd" ] || [ -z "$dir" ]; then echo "usage: scripts/postgres.sh start|stop DIR" >&2; exit 2; fi
bin=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1 || true)
if [ -z "$bin" ] || [ ! -x "$bin/pg_ctl" ]; then echo "postgres.sh: no Postgres server installed (apt-get install postgresql)" >&2; exit 1; fi
as_owner() { if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi; }
case "$cmd" in
  start)
    mkdir -p "$dir"; [ "$(id -u)" = 0 ] && chown postgres "$dir"
    as_owner "$bin/initdb" -D "$dir/data" -U akc --auth=trust -E UTF8 --no-sync >"$dir/initdb.log" 2>&1 \
      || { echo "postgres.sh: initdb failed:" >&2; tail -n 5 "$dir/initdb.log" >&2; exit 1; }
    as_owner "$bin/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 60 \
      -o "-c listen_addresses='' -c unix_socket_directories='$dir' -c max_connections=200 -c fsync=on" start >/dev/null \
      || { echo "postgres.sh: the server did not start:" >&2; tail -n 5 "$dir/server.log" >&2; exit 1; }
    echo "postgresql://akc@/postgres?host=$dir"
    ;;
  stop)
    if [ -d "$dir/data" ]; then as_owner "$bin/pg_ctl" -D "$dir/data" -m fast -w stop >/dev/null || true; fi
    rm -rf "$dir"
    ;;
  *) echo "usage: scripts/postgres.sh start|stop DIR" >&2; exit 2 ;;
esac
