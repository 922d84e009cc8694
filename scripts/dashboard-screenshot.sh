#!/usr/bin/env bash
# Takes the README's pictures of JobRunr's dashboard: an `outrun dev` (in a scratch directory)
# runs executions of two owners in every state, then headless Chromium photographs the job
# list by state and one failed job's page.
#
# Needs: worker/target/outrun.jar (./mvnw -q -DskipTests package -pl worker -am), curl, python3 and
# Chromium (Debian: apt-get install chromium). Writes docs/dashboard-*.png.
set -euo pipefail
cd "$(dirname "$0")/.."

JAR=worker/target/outrun.jar
OUT=docs
API_PORT=${API_PORT:-18080}
DASH_PORT=${DASH_PORT:-18000}
CHROMIUM=$(command -v chromium || command -v chromium-browser || true)
[ -f "$JAR" ] || { echo "build the jar first: ./mvnw -q -DskipTests package -pl worker -am" >&2; exit 2; }
[ -n "$CHROMIUM" ] || { echo "needs Chromium (Debian: apt-get install chromium)" >&2; exit 2; }

DIR=$(mktemp -d)
LOG="$DIR/dev.log"
java -jar "$JAR" dev --data-dir "$DIR/data" --port "$API_PORT" --dashboard-port "$DASH_PORT" --slots 2 >"$LOG" 2>&1 &
DEV=$!
trap 'kill $DEV 2>/dev/null; wait $DEV 2>/dev/null; rm -rf "$DIR"' EXIT
for _ in $(seq 120); do grep -q "outrun dev is ready" "$LOG" && break; sleep 1; done
grep -q "outrun dev is ready" "$LOG" || { cat "$LOG" >&2; exit 1; }

API="http://127.0.0.1:$API_PORT"
DB_URL=$(grep '  database' "$LOG" | grep -o 'jdbc:postgresql://[^ ]*' | head -1)  # the banner's line: log lines carry ?user=…
DEV_TOKEN=$(cat "$DIR/data/dev-token")
ALICE_TOKEN=$(java -jar "$JAR" token create --owner alice --db-url "$DB_URL" --db-user postgres \
  --db-password "$(cat "$DIR/data/db-password")" 2>/dev/null | tail -1)
PASSWORD=$(cat "$DIR/data/dashboard-password")

submit() { # token, JSON body → execution id
  curl -s "$API/v1/executions" -H "Authorization: Bearer $1" -H 'Content-Type: application/json' -d "$2" \
    | grep -o '"executionId":"[^"]*"' | cut -d'"' -f4
}
status() { curl -s "$API/v1/executions/$2" -H "Authorization: Bearer $1" | grep -o '"status":"[^"]*"' | head -1 | cut -d'"' -f4; }
await() { # token, id, wanted status
  for _ in $(seq 60); do [ "$(status "$1" "$2")" = "$3" ] && return; sleep 1; done
  echo "execution $2 never became $3" >&2; exit 1
}

# Ended: two succeeded, three failed (as in issue 15), one timed out, one cancelled while running.
ok1=$(submit "$DEV_TOKEN" '{"command": "echo building; sleep 1; echo all good"}')
ok2=$(submit "$ALICE_TOKEN" '{"command": "python3 -c \"print(sum(range(10**6)))\""}')
f1=$(submit "$DEV_TOKEN" '{"command": "make test"}')
f2=$(submit "$ALICE_TOKEN" '{"command": "echo checking; exit 3"}')
f3=$(submit "$ALICE_TOKEN" '{"command": "python3 train.py"}')
t1=$(submit "$DEV_TOKEN" '{"command": "sleep 30", "timeoutMs": 2000}')
for pair in "$DEV_TOKEN $ok1 succeeded" "$ALICE_TOKEN $ok2 succeeded" "$DEV_TOKEN $f1 failed" \
            "$ALICE_TOKEN $f2 failed" "$ALICE_TOKEN $f3 failed" "$DEV_TOKEN $t1 timed_out"; do
  await $pair
done
c1=$(submit "$ALICE_TOKEN" '{"command": "echo waiting for data; sleep 300"}')
await "$ALICE_TOKEN" "$c1" running
curl -s -X POST "$API/v1/executions/$c1/cancel" -H "Authorization: Bearer $ALICE_TOKEN" >/dev/null
await "$ALICE_TOKEN" "$c1" cancelled
# Live: two running (the two slots), one queued behind them.
r1=$(submit "$DEV_TOKEN" '{"command": "for i in $(seq 600); do echo epoch $i; sleep 1; done"}')
r2=$(submit "$ALICE_TOKEN" '{"command": "sleep 600"}')
await "$DEV_TOKEN" "$r1" running
await "$ALICE_TOKEN" "$r2" running
submit "$DEV_TOKEN" '{"command": "echo my turn"}' >/dev/null
sleep 6 # one dashboard refresh

mkdir -p "$OUT"
DASH="http://dev:$PASSWORD@127.0.0.1:$DASH_PORT"
shoot() { # file, path
  # (--virtual-time-budget never returns here: the dashboard keeps a server-sent-events stream
  # open. Without it, the capture is taken at page load: the per-state counts are drawn by
  # then, a job list or page that is still loading may not be. Known gap: drive Chromium over
  # its DevTools protocol to wait for the list.)
  timeout 60 "$CHROMIUM" --headless --no-sandbox --disable-gpu --hide-scrollbars --window-size=1400,900 \
    --timeout=15000 --screenshot="$OUT/$1" "$DASH$2" >/dev/null 2>&1 || true
  echo "wrote $OUT/$1"
}
FAILED_JOB=$(curl -s "$DASH/api/jobs?state=FAILED&offset=0&limit=20&order=updatedAt:DESC" | python3 -c '
import json, sys
print(next((j["id"] for j in json.load(sys.stdin)["items"] if j["jobName"].startswith("[alice] echo checking")), ""))')
shoot dashboard-failed.png "/dashboard/jobs?state=FAILED"
shoot dashboard-succeeded.png "/dashboard/jobs?state=SUCCEEDED"
shoot dashboard-deleted.png "/dashboard/jobs?state=DELETED"
[ -n "$FAILED_JOB" ] && shoot dashboard-failed-job.png "/dashboard/jobs/$FAILED_JOB"
