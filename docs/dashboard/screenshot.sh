#!/usr/bin/env bash
# Makes the README's pictures of JobRunr's dashboard from a live, throwaway `outrun dev`:
#
#   ./mvnw -B -o -q install -DskipTests -DskipITs   # once: builds worker/target/outrun.jar
#   docs/dashboard/screenshot.sh [OUT_DIR]          # default docs/dashboard
#
# writes OUT_DIR/dashboard.png (the Succeeded jobs list, with every state's count beside it)
# and OUT_DIR/dashboard-job.png (a failed execution's job page, Outrun's summary opened).
#
# Assumes: a JDK 17+ on PATH and worker/target/outrun.jar built; node 18+ (it drives Chromium);
# curl; Debian's `chromium` (installed with apt-get when missing and run as root, else it says
# so and exits 2). No Docker needed: dev runs with the host-process sandbox (bubblewrap when
# installed), in a fresh data dir under $TMPDIR on free loopback ports, so it clashes with no
# other `outrun dev` and works the same with or without a Docker engine; it is stopped and its
# directory removed on exit (when the script fails, its log and the page texts are kept).
#
# It submits executions that leave the dashboard with jobs in every state an Outrun job takes:
# succeeded (4), failed (an exit 1 and a timeout), deleted (a running one cancelled),
# processing (2 long runs filling dev's 2 slots), enqueued (2 waiting behind them), scheduled
# (a start 6 h ahead), and one recurring job (a daily schedule 12 h ahead, so none fires during
# the run; Outrun's own clock fires schedules, and JobRunr schedules no job ahead for it).
# JobRunr's Pending stays 0: Outrun never uses it.
#
# How it waits: the dashboard holds an event stream open, so "network idle" never comes.
# Tried: `chromium --headless --screenshot --virtual-time-budget=3000` on it never returned
# (killed after 60 s, no PNG); without a budget it shoots the page at load, every count "?"
# and "No jobs found". docs/dashboard/capture.mjs drives Chromium through the DevTools protocol
# over a pipe (--remote-debugging-pipe: node's child_process and JSON, no WebSocket, no npm
# package) and polls document.body.innerText until the state counts and the job rows it
# expects are there and the text has held still for a second; then it captures. The script then
# checks the PNGs (signature, 1280 px wide, a sensible size) and the text the page showed, and
# exits non-zero saying what is missing. When optipng is installed (optional) it shrinks the
# PNGs losslessly. 35–50 s on 2 cores shared with other builds.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
JAR="$ROOT/worker/target/outrun.jar"
OUT_DIR="$(mkdir -p "${1:-$ROOT/docs/dashboard}" && cd "${1:-$ROOT/docs/dashboard}" && pwd)"
WIDTH=1280
HEIGHT=800
JOB_HEIGHT=960

die() { echo "screenshot.sh: $*" >&2; exit 1; }
[[ -f "$JAR" ]] || { echo "screenshot.sh: $JAR is missing; build it: ./mvnw -B -o -q install -DskipTests -DskipITs" >&2; exit 2; }
command -v node >/dev/null || { echo "screenshot.sh: node is missing" >&2; exit 2; }
command -v curl >/dev/null || { echo "screenshot.sh: curl is missing" >&2; exit 2; }
CHROMIUM="$(command -v chromium || command -v chromium-browser || true)"
if [[ -z "$CHROMIUM" ]]; then
  if [[ $(id -u) -eq 0 ]] && command -v apt-get >/dev/null; then
    echo "== installing chromium (apt-get)"
    DEBIAN_FRONTEND=noninteractive apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
    CHROMIUM="$(command -v chromium)"
  else
    echo "screenshot.sh: chromium is missing; install it: apt-get install -y chromium" >&2; exit 2
  fi
fi

TMP="$(mktemp -d "${TMPDIR:-/tmp}/outrun-screenshot.XXXXXX")"
DEV_PID=""
CAPTURE_PID=""
stop_group() { # pid
  local pid=$1
  [[ -n "$pid" ]] && kill -0 "$pid" 2>/dev/null || return 0
  kill -TERM -- "-$pid" 2>/dev/null || kill -TERM "$pid" 2>/dev/null || true
  for _ in $(seq 1 30); do kill -0 "$pid" 2>/dev/null || return 0; sleep 0.5; done
  kill -KILL -- "-$pid" 2>/dev/null || true
}
cleanup() {
  local rc=$?
  stop_group "$CAPTURE_PID"
  stop_group "$DEV_PID"
  if [[ $rc -ne 0 ]]; then
    if [[ -f "$TMP/dev.log" ]]; then
      echo "--- last lines of outrun dev's log ($TMP/dev.log) ---" >&2
      tail -n 20 "$TMP/dev.log" >&2 || true
    fi
    rm -rf "$TMP/data" "$TMP/chromium" # the database and the browser's profile; the rest is small
    echo "screenshot.sh: failed; its log, page texts and pictures are in $TMP" >&2
  else
    rm -rf "$TMP"
  fi
  exit $rc
}
trap cleanup EXIT
trap 'exit 130' INT TERM

START=$(date +%s)
free_port() { node -e 'const s = require("net").createServer().listen(0, "127.0.0.1", () => { console.log(s.address().port); s.close(); })'; }
# field KEY: prints the value of KEY in the JSON object on stdin (empty when absent).
field() { node -e 'let s = ""; process.stdin.on("data", (d) => s += d).on("end", () => { const v = JSON.parse(s)[process.argv[1]]; console.log(v ?? ""); })' "$1"; }

# --- outrun dev, in its own process group --------------------------------------------------
PORT="$(free_port)"
DASH_PORT="$(free_port)"
[[ "$PORT" != "$DASH_PORT" ]] || DASH_PORT="$(free_port)"
mkdir -p "$TMP/data" "$TMP/work"
(cd "$TMP/work" && exec setsid java -jar "$JAR" dev --sandbox process --slots 2 --data-dir "$TMP/data" \
  --port "$PORT" --bind 127.0.0.1 --dashboard-port "$DASH_PORT" >"$TMP/dev.log" 2>&1 </dev/null) &
DEV_PID=$!
for _ in $(seq 1 180); do
  grep -q "Stop with Ctrl-C" "$TMP/dev.log" 2>/dev/null && break
  kill -0 "$DEV_PID" 2>/dev/null || die "outrun dev exited early"
  sleep 0.5
done
grep -q "Stop with Ctrl-C" "$TMP/dev.log" || die "outrun dev did not start within 90 s"
export NO_PROXY="127.0.0.1,localhost${NO_PROXY:+,$NO_PROXY}" no_proxy="127.0.0.1,localhost${no_proxy:+,$no_proxy}"
API="http://127.0.0.1:$PORT"
DASH="http://127.0.0.1:$DASH_PORT"
TOKEN="$(cat "$TMP/data/dev-token")"
DASH_AUTH="dev:$(cat "$TMP/data/dashboard-password")"
echo "== outrun dev up in $(( $(date +%s) - START )) s: API $API, dashboard $DASH"

# --- executions in every state ---------------------------------------------------------------
api() { # METHOD PATH [BODY]
  local args=(-sS --fail-with-body -X "$1" "$API$2" -H "Authorization: Bearer $TOKEN")
  [[ $# -lt 3 ]] || args+=(-H 'Content-Type: application/json' --data-binary "$3")
  curl "${args[@]}"
}
submit() { # BODY EXPECTED_STATUS: submits, checks the status answered, prints the id
  local answer id status
  answer="$(api POST /v1/executions "$1")" || die "submit failed: $answer"
  id="$(field executionId <<<"$answer")"
  status="$(field status <<<"$answer")"
  [[ "$status" == "$2" ]] || die "expected $2 for $1, got: $answer"
  echo "$id"
}
await_status() { # ID STATUS: polls until the execution has STATUS (20 s at most)
  local status=""
  for _ in $(seq 1 100); do
    status="$(api GET "/v1/executions/$1?output=none" | field status)" || true
    [[ "$status" == "$2" ]] && return 0
    sleep 0.2
  done
  die "execution $1 is $status, not $2, after 20 s"
}

# Succeeded (each answered at its end within the wait).
submit '{"command": "for i in 1 2 3; do echo step $i; sleep 1; done", "waitMs": 20000}' succeeded >/dev/null
submit '{"command": "seq 1 200000 | sort -rn | head -n 3", "waitMs": 20000}' succeeded >/dev/null
submit '{"command": "printf \"%s\\n\" a b c > list.txt && wc -l list.txt", "waitMs": 20000}' succeeded >/dev/null
submit '{"command": "echo build ok", "waitMs": 20000}' succeeded >/dev/null
# Failed: an exit code, a timeout.
FAILED_ID="$(submit '{"command": "echo \"FAIL test_parse (2 of 40 failed)\" >&2; exit 1", "waitMs": 20000}' failed)"
submit '{"command": "sleep 30", "timeoutMs": 1500, "waitMs": 20000}' timed_out >/dev/null
# Deleted: a running one cancelled by its owner.
CANCEL_ID="$(submit '{"command": "echo started; sleep 300", "waitMs": 20000, "waitFor": "output"}' running)"
api POST "/v1/executions/$CANCEL_ID/cancel" >/dev/null
await_status "$CANCEL_ID" cancelled
# Processing: two long runs take both slots...
submit '{"command": "for i in $(seq 1 600); do echo \"batch $i\"; sleep 1; done", "waitMs": 20000, "waitFor": "output"}' running >/dev/null
submit '{"command": "echo warming up; sleep 600", "waitMs": 20000, "waitFor": "output"}' running >/dev/null
# ...enqueued: two wait behind them...
submit '{"command": "make -j2 test"}' queued >/dev/null
submit '{"command": "npm run lint"}' queued >/dev/null
# ...scheduled: a start 6 h ahead...
submit '{"command": "echo nightly report", "delayMs": 21600000}' queued >/dev/null
# ...and a recurring job: a daily schedule whose next firing is 12 h ahead (none during the run).
CRON="$(date -u -d '+12 hours' '+%M %H') * * *"
api POST /v1/schedules "{\"name\": \"nightly-backup\", \"cron\": \"$CRON\", \"submission\": {\"command\": \"echo backup\"}}" >/dev/null
echo "== executions submitted in $(( $(date +%s) - START )) s (failed one: $FAILED_ID)"

# --- the dashboard: the jobs list, then a failed execution's job page ------------------------
# The failed execution's job: the dashboard's own API lists it (its id is derived from the execution).
FAILED_JOB="$(curl -sS --fail -u "$DASH_AUTH" "$DASH/api/jobs?state=FAILED&offset=0&limit=20" \
  | node -e 'let s = ""; process.stdin.on("data", (d) => s += d).on("end", () => {
      const job = JSON.parse(s).items.find((j) => j.jobName.includes("test_parse"));
      console.log(job ? job.id : ""); })')"
[[ -n "$FAILED_JOB" ]] || die "the dashboard's Failed list has no job for the failed execution"

# What each page must show before it is captured (regular expressions over its innerText, where
# the counts beside every jobs page read "Scheduled\n1\nEnqueued\n2…"). The spec is written as
# JSON by node, from the environment, so no pattern needs escaping for JSON.
COUNTS='Scheduled\s+1\s+Enqueued\s+2\s+Processing\s+2\s+Succeeded\s+4\s+Failed\s+2\s+Deleted\s+1'
CHROMIUM="$CHROMIUM" PROFILE="$TMP/chromium" DASH_AUTH="$DASH_AUTH" DASH="$DASH" TMP="$TMP" COUNTS="$COUNTS" \
FAILED_JOB="$FAILED_JOB" WIDTH="$WIDTH" HEIGHT="$HEIGHT" JOB_HEIGHT="$JOB_HEIGHT" node -e '
  const e = process.env;
  const spec = {
    chromium: e.CHROMIUM, profile: e.PROFILE, auth: e.DASH_AUTH, width: +e.WIDTH, height: +e.HEIGHT, timeoutMs: 60000,
    shots: [
      { url: `${e.DASH}/dashboard/jobs?state=SUCCEEDED`, out: `${e.TMP}/dashboard.png`, textOut: `${e.TMP}/dashboard.txt`,
        expect: [e.COUNTS, String.raw`RECURRING JOBS\s+1`, "Succeeded jobs", "1–4 of 4",
                 String.raw`\[dev\] for i in 1 2 3`, String.raw`\[dev\] echo build ok`] },
      { url: `${e.DASH}/dashboard/jobs/${e.FAILED_JOB}`, out: `${e.TMP}/dashboard-job.png`, textOut: `${e.TMP}/dashboard-job.txt`,
        height: +e.JOB_HEIGHT, expect: [e.COUNTS, "Job processing failed - command_failed"],
        click: "Job Processing", expectAfterClick: [String.raw`failed · attempt 1 of 3 · node \S+ · exit code 1`, "FAIL test_parse"] },
    ],
  };
  require("fs").writeFileSync(`${e.TMP}/spec.json`, JSON.stringify(spec, null, 1));
'
setsid node "$ROOT/docs/dashboard/capture.mjs" "$TMP/spec.json" &
CAPTURE_PID=$!
wait "$CAPTURE_PID" || die "capturing the dashboard failed (see above)"
CAPTURE_PID=""

# --- checks ----------------------------------------------------------------------------------
check_png() { # FILE HEIGHT
  node -e '
    const [file, w, h] = [process.argv[1], +process.argv[2], +process.argv[3]];
    const b = require("fs").readFileSync(file);
    const sig = "89504e470d0a1a0a";
    if (b.subarray(0, 8).toString("hex") !== sig || b.toString("latin1", 12, 16) !== "IHDR") { console.error(`${file} is not a PNG`); process.exit(1); }
    const [width, height] = [b.readUInt32BE(16), b.readUInt32BE(20)];
    if (width !== w || height !== h) { console.error(`${file} is ${width}x${height}, not ${w}x${h}`); process.exit(1); }
    if (b.length < 20000 || b.length > 1000000) { console.error(`${file} is ${b.length} bytes: a blank page or a runaway one`); process.exit(1); }
    console.log(`   ${file.replace(/.*\//, "")}: ${width}x${height}, ${Math.round(b.length / 1024)} KiB`);
  ' "$1" "$WIDTH" "$2" || die "$1 is not the picture it should be"
}
check_text() { # FILE PATTERN... : each extended regex must match the page's text, lines joined by spaces
  local file=$1 flat; shift
  flat="$(tr -s '\n\t' '  ' <"$file")"
  for pattern in "$@"; do
    grep -qE -- "$pattern" <<<"$flat" || die "the page ($file) does not show /$pattern/; it showed: $flat"
  done
}
COUNTS_FLAT='Scheduled 1 Enqueued 2 Processing 2 Succeeded 4 Failed 2 Deleted 1'
check_png "$TMP/dashboard.png" "$HEIGHT"
check_text "$TMP/dashboard.txt" "$COUNTS_FLAT" 'RECURRING JOBS 1' 'Succeeded jobs' 'owner:dev' \
  '\[dev\] for i in 1 2 3' '\[dev\] seq 1 200000' '\[dev\] printf' '\[dev\] echo build ok'
check_png "$TMP/dashboard-job.png" "$JOB_HEIGHT"
check_text "$TMP/dashboard-job.txt" "$COUNTS_FLAT" "Job Id: $FAILED_JOB" 'FAIL test_parse' \
  'command_failed: The command exited with code 1' 'exit code 1'
if command -v optipng >/dev/null; then optipng -quiet -o2 "$TMP/dashboard.png" "$TMP/dashboard-job.png"; fi
cp "$TMP/dashboard.png" "$TMP/dashboard-job.png" "$OUT_DIR/"
echo "== wrote $OUT_DIR/dashboard.png and $OUT_DIR/dashboard-job.png in $(( $(date +%s) - START )) s: $COUNTS_FLAT, 1 recurring"
