#!/bin/sh
# The entrypoint of the Redis Sentinel group's pods (deploy/README.md, "Redis high
# availability"): each start decides the pod's role from what the group says now, so a pod that
# restarts, or is rescheduled, rejoins as a replica of the current primary instead of starting as
# a second primary with its old data.
#
#   redis-ha.sh node [redis-server args...]       a data node (redis-server)
#   redis-ha.sh sentinel [redis-server args...]   a sentinel (redis-server --sentinel)
#   redis-ha.sh prestop                            a data node about to stop: if it is the
#                                                  primary, has the sentinels fail over first
#
# The current primary is, in this order: what a sentinel names (SENTINEL get-master-addr-by-name;
# a sentinel naming another node over one naming this node, which may be stale after a failover),
# else a data node other than this one that says it is a primary (ROLE; the sentinels are all
# down), else SEED (the group's first start: nobody knows a primary yet). A data node that is
# itself the primary named starts as primary (its append-only file is on its volume and the
# sentinels still count on it); any other starts with --replicaof the primary.
#
# Settings (environment; the manifests set them):
#   PRIMARY_NAME        the group's name (DNASERVE_REDIS_PRIMARY_NAME)
#   SELF_HOST           the address this pod announces (its stable DNS name), SELF_PORT its port
#   SEED                host:port of the primary at the group's first start
#   NODES, SENTINELS    host:port ... of every data node, of every sentinel
#   QUORUM              sentinels that must agree that the primary is down (default 2)
#   DOWN_AFTER_MS       unanswered time after which a sentinel takes a server for down (5000)
#   REDIS_PASSWORD_FILE, SENTINEL_PASSWORD_FILE   the two passwords (mounted Secret files)
#   CONF_DIR            a writable directory for the generated configuration
#   DATA_DIR            the data node's persistent directory (/data)
set -eu

role=${1:-}
[ $# -gt 0 ] && shift

fail() {
  echo "redis-ha: $*" >&2
  exit 2
}

# A password from its file, without the trailing newline; a placeholder left in the overlay
# (CHANGE-ME...) is refused: a group with a published password is worse than none starting.
read_secret() {
  [ -r "$1" ] || fail "cannot read the password file $1"
  secret=$(cat "$1")
  [ -n "$secret" ] || fail "the password file $1 is empty"
  case "$secret" in CHANGE-ME*) fail "the password in $1 is the overlay's placeholder: set your own";; esac
  printf '%s' "$secret"
}

# Two lines from redis-cli (host, port) to "host port"; nothing for anything else.
host_port() {
  set -- $1
  [ $# -eq 2 ] && case "$2" in *[!0-9]*|'') ;; *) echo "$1 $2";; esac
  return 0
}

# One command to host:port with the given password (through the environment, not argv), at
# most 3 s; its output, or nothing on failure.
ask() {
  target=$1 password=$2
  shift 2
  REDISCLI_AUTH=$password timeout 3 redis-cli --no-auth-warning -h "${target%:*}" \
    -p "${target##*:}" "$@" 2>/dev/null || true
}

# A sentinel that names this very node may be stale: just after a failover the sentinels that
# did not lead it learn the new primary only from the leader's next hello (about 2 s), and this
# node, starting, is plainly not serving as anyone's primary. So every sentinel is asked, and one
# that names another node wins over one that names this node.
current_primary() {
  named_self=""
  for s in $SENTINELS; do
    [ "$role" = sentinel ] && [ "$s" = "$SELF_HOST:$SELF_PORT" ] && continue
    answer=$(host_port "$(ask "$s" "$sentinel_password" SENTINEL get-master-addr-by-name "$PRIMARY_NAME")")
    [ -n "$answer" ] || continue
    if [ "$answer" = "$SELF_HOST $SELF_PORT" ]; then
      [ -n "$named_self" ] || named_self="$answer sentinel $s"
      continue
    fi
    echo "$answer sentinel $s"
    return
  done
  if [ -n "$named_self" ]; then
    echo "$named_self"
    return
  fi
  for n in $NODES; do
    [ "$role" = node ] && [ "$n" = "$SELF_HOST:$SELF_PORT" ] && continue
    if [ "$(ask "$n" "$redis_password" ROLE | head -n 1)" = master ]; then
      echo "${n%:*} ${n##*:} node $n"
      return
    fi
  done
  echo "${SEED%:*} ${SEED##*:} seed"
}

: "${PRIMARY_NAME:?}" "${SELF_HOST:?}" "${SELF_PORT:?}" "${SEED:?}" "${NODES:?}" "${SENTINELS:?}"
: "${REDIS_PASSWORD_FILE:?}" "${SENTINEL_PASSWORD_FILE:?}" "${CONF_DIR:?}"
redis_password=$(read_secret "$REDIS_PASSWORD_FILE")
sentinel_password=$(read_secret "$SENTINEL_PASSWORD_FILE")

# The primary stopping (a rollout, a drain): ask a sentinel to fail over now and wait, at most
# 30 s, until this node is a replica; clients then see a switch of about a second instead of
# DOWN_AFTER_MS of silence. Anything else stops at once.
if [ "$role" = prestop ]; then
  self="$SELF_HOST:$SELF_PORT"
  [ "$(ask "$self" "$redis_password" ROLE | head -n 1)" = master ] || exit 0
  for s in $SENTINELS; do
    [ "$(ask "$s" "$sentinel_password" SENTINEL FAILOVER "$PRIMARY_NAME")" = OK ] && break
  done
  for _ in $(seq 1 30); do
    [ "$(ask "$self" "$redis_password" ROLE | head -n 1)" = master ] || exit 0
    sleep 1
  done
  echo "redis-ha: no failover within 30 s; stopping as the primary" >&2
  exit 0
fi
primary=$(current_primary)
primary_host=$(echo "$primary" | cut -d' ' -f1)
primary_port=$(echo "$primary" | cut -d' ' -f2)
source=$(echo "$primary" | cut -d' ' -f3-)
conf="$CONF_DIR/$role.conf"
umask 077  # the configuration holds the passwords

case "$role" in
node)
  {
    echo "port $SELF_PORT"
    echo "dir ${DATA_DIR:-/data}"
    echo "requirepass $redis_password"
    echo "masterauth $redis_password"
    # Replicas are known to the sentinels by this name, which survives the pod's new address.
    echo "replica-announce-ip $SELF_HOST"
    if [ "$primary_host" = "$SELF_HOST" ] && [ "$primary_port" = "$SELF_PORT" ]; then
      echo "redis-ha: $SELF_HOST:$SELF_PORT starts as the primary ($source)" >&2
    else
      echo "replicaof $primary_host $primary_port"
      echo "redis-ha: $SELF_HOST:$SELF_PORT starts as a replica of $primary_host:$primary_port ($source)" >&2
    fi
  } >"$conf"
  exec redis-server "$conf" "$@"
  ;;
sentinel)
  {
    echo "port $SELF_PORT"
    echo "dir $CONF_DIR"
    echo "requirepass $sentinel_password"
    echo "sentinel sentinel-pass $sentinel_password"
    echo "sentinel resolve-hostnames yes"
    echo "sentinel announce-hostnames yes"
    echo "sentinel announce-ip $SELF_HOST"
    echo "sentinel announce-port $SELF_PORT"
    echo "sentinel monitor $PRIMARY_NAME $primary_host $primary_port ${QUORUM:-2}"
    echo "sentinel auth-pass $PRIMARY_NAME $redis_password"
    echo "sentinel down-after-milliseconds $PRIMARY_NAME ${DOWN_AFTER_MS:-5000}"
    echo "sentinel failover-timeout $PRIMARY_NAME 60000"
    echo "sentinel parallel-syncs $PRIMARY_NAME 1"
  } >"$conf"
  echo "redis-ha: sentinel $SELF_HOST:$SELF_PORT watches $primary_host:$primary_port ($source)" >&2
  exec redis-server "$conf" --sentinel "$@"
  ;;
*)
  fail "usage: redis-ha.sh node|sentinel [redis-server args...]"
  ;;
esac
