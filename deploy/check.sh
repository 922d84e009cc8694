#!/usr/bin/env bash
# End-to-end check of the deployable fleet, for CI: builds the node image on a local Debian base
# (no public registry needed), starts deploy/docker-compose.yml (PostgreSQL, migrations, two API
# nodes, three workers on this machine's Docker engine), submits one execution through one API
# node, waits for `succeeded` through the other, and tears everything down (also on failure).
#
#   deploy/check.sh          needs root (debootstrap), docker, docker-compose, python3, curl
#
# Environment: OUTRUN_CHECK_KEEP=1 leaves the fleet running for a look (then tear it down with
# the `docker-compose ... down -v` line it prints).
set -euo pipefail
cd "$(dirname "$0")/.."
# The engine here is 20.10 with a newer CLI and no buildx plugin: use the classic builder.
export DOCKER_BUILDKIT=0

log() { printf '\n== %s: %s\n' "$(date +%H:%M:%S)" "$*"; }
seconds() { date +%s; }
START=$(seconds)

for tool in docker docker-compose python3 curl; do
  command -v "$tool" >/dev/null 2>&1 || { echo "deploy/check.sh: $tool is missing (Debian: apt-get install docker.io docker-compose python3 curl)" >&2; exit 1; }
done

if [ ! -f worker/target/outrun.jar ]; then
  log "building worker/target/outrun.jar"
  ./mvnw -q -B -ntp -DskipTests package -pl worker -am
fi

log "base images from Debian packages (cached by tag and recipe)"
deploy/base/build.sh outrun-jre-base:bookworm
sandbox/image/build.sh
T0=$(seconds)
# --network host: the RUN steps need no bridge of the engine's, so the build works even where the
# host engine has lost its default bridge (docker0); a failed build stops here with its output
# and a clear line, never later as a registry pull of the tag that was not built.
build_image() { # tag dockerfile
  local out
  if ! out="$(docker build -q --network host -f "$2" --build-arg BASE=outrun-jre-base:bookworm -t "$1" . 2>&1)"; then
    printf '%s\n' "$out" | grep -v -e DEPRECATED -e BuildKit -e environment-variable -e '^$' >&2 || true
    echo "deploy/check.sh: building $1 from $2 failed (output above)" >&2
    exit 1
  fi
  docker image inspect "$1" >/dev/null 2>&1 || { echo "deploy/check.sh: $1 was not built from $2" >&2; exit 1; }
}
build_image outrun-postgres:15-ci deploy/postgres/Dockerfile
T1=$(seconds)
log "building the node image (deploy/Dockerfile on outrun-jre-base:bookworm)"
build_image outrun:ci deploy/Dockerfile
T2=$(seconds)
echo "postgres image $((T1 - T0)) s, node image $((T2 - T1)) s"

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
export COMPOSE_PROJECT_NAME="outrun-check-$$"
export OUTRUN_IMAGE=outrun:ci POSTGRES_IMAGE=outrun-postgres:15-ci
export OUTRUN_API_1_PORT="$(free_port)" OUTRUN_API_2_PORT="$(free_port)"
export DOCKER_GID="$(stat -c %g /var/run/docker.sock)"
# One secrets key and one issuer for the fleet: the run below reads itself through $OUTRUN_API.
OUTRUN_SECRETS_KEY="$(head -c 32 /dev/urandom | base64)"
export OUTRUN_SECRETS_KEY OUTRUN_PUBLIC_URL="http://127.0.0.1:$OUTRUN_API_1_PORT"
COMPOSE=(docker-compose -f deploy/docker-compose.yml)

teardown() {
  local code=$?
  if [ "$code" -ne 0 ]; then
    log "failed; the fleet's logs"
    "${COMPOSE[@]}" logs --no-color --tail=60 || true
  fi
  if [ "${OUTRUN_CHECK_KEEP:-}" = 1 ]; then
    echo "left running: COMPOSE_PROJECT_NAME=$COMPOSE_PROJECT_NAME ${COMPOSE[*]} down -v"
  else
    log "tearing the fleet down"
    "${COMPOSE[@]}" down -v --remove-orphans >/dev/null 2>&1 || true
  fi
  exit "$code"
}
trap teardown EXIT

log "starting the fleet ($COMPOSE_PROJECT_NAME: postgres, migrate, api-1, api-2, 3 workers)"
T3=$(seconds)
mkdir -p /tmp/outrun-leases && chmod 1777 /tmp/outrun-leases  # the runs' lease files, same path on host and in workers
"${COMPOSE[@]}" up -d
API1="http://127.0.0.1:$OUTRUN_API_1_PORT"
API2="http://127.0.0.1:$OUTRUN_API_2_PORT"

wait_for() { # what, seconds, command...
  local what="$1" within="$2"; shift 2
  local deadline=$(( $(seconds) + within ))
  until "$@" >/dev/null 2>&1; do
    [ "$(seconds)" -lt "$deadline" ] || { echo "timed out after ${within}s waiting for $what" >&2; return 1; }
    sleep 1
  done
}
wait_for "api-1 /health" 120 curl -fsS "$API1/health"
wait_for "api-2 /health" 60 curl -fsS "$API2/health"
workers_ready() { [ "$("${COMPOSE[@]}" logs --no-color worker | grep -c 'outrun: worker .* ready')" -ge 3 ]; }
wait_for "3 workers ready" 120 workers_ready
T4=$(seconds)
echo "fleet up in $((T4 - T3)) s"

log "an owner and its token (docker-compose run --rm migrate token create)"
TOKEN="$("${COMPOSE[@]}" run --rm -T migrate token create --owner ci | tail -n 1 | tr -d '\r')"
case "$TOKEN" in otk_*) ;; *) echo "no token: $TOKEN" >&2; exit 1 ;; esac

log "one execution: submitted to api-1, followed on api-2, run in a container by a worker"
# It also reads itself through its worker's bridge to api-1, with its run token (issue 31).
SELF='import json, os, urllib.request as u; r = u.Request(os.environ["OUTRUN_API"] + "/v1/executions/" + os.environ["OUTRUN_EXECUTION_ID"], headers={"Authorization": "Bearer " + os.environ["OUTRUN_API_TOKEN"]}); print("api says", json.load(u.urlopen(r, timeout=20))["status"])'
BODY="$(python3 -c 'import json, sys; print(json.dumps({"command": "echo hello from the fleet; id -u; test -f /.dockerenv && echo in a container; python3 -c " + json.dumps(sys.argv[1])}))' "$SELF")"
ID="$(curl -fsS "$API1/v1/executions" -H "Authorization: Bearer $TOKEN" -H 'Content-Type: application/json' \
  -d "$BODY" | python3 -c 'import json,sys; print(json.load(sys.stdin)["executionId"])')"
echo "execution $ID"
T5=$(seconds)
deadline=$(( T5 + 120 ))
while :; do
  VIEW="$(curl -fsS "$API2/v1/executions/$ID?waitMs=20000" -H "Authorization: Bearer $TOKEN")"
  STATUS="$(printf '%s' "$VIEW" | python3 -c 'import json,sys; print(json.load(sys.stdin)["status"])')"
  case "$STATUS" in queued|running) ;; *) break ;; esac
  [ "$(seconds)" -lt "$deadline" ] || { echo "still $STATUS after 120 s" >&2; exit 1; }
done
printf '%s' "$VIEW" | python3 -c '
import json, sys
v = json.load(sys.stdin)
out = v["stdout"]["text"]
print("status %s, attempt %s, stdout %r" % (v["status"], v["attempt"], out))
assert v["status"] == "succeeded", v
assert out == "hello from the fleet\n10001\nin a container\napi says running\n", (out, v["stderr"]["text"])
'''
log "the fleet's signing key is published on api-2"
curl -fsS "$API2/.well-known/jwks.json" | python3 -c 'import json,sys; keys = json.load(sys.stdin)["keys"]; print("%d key(s)" % len(keys)); assert keys and keys[0]["alg"] == "ES256", keys'
T6=$(seconds)
echo "execution ended in $((T6 - T5)) s"
log "ok: image builds $((T2 - T0)) s, fleet up $((T4 - T3)) s, execution $((T6 - T5)) s, whole check $(( $(seconds) - START )) s"
