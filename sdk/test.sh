#!/usr/bin/env bash
# Runs the Python and TypeScript client suites against a live `outrun dev` of its own.
#
#   ./mvnw -B -o -q install -DskipTests -DskipITs   # once: builds worker/target/outrun.jar
#   sdk/test.sh
#
# It starts dev (host-process sandbox, under bubblewrap where it is installed: runs reach dev's
# API as OUTRUN_API through its bridge, for the inside-a-run tests; a fresh data dir, a free
# loopback port, no dashboard), installs the Python package into a fresh venv and the npm
# package (packed) into a fresh npm project, all offline, runs both suites, and stops dev on exit. Exits non-zero if any fails.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
JAR="$ROOT/worker/target/outrun.jar"
[[ -f "$JAR" ]] || { echo "sdk/test.sh: $JAR is missing; build it: ./mvnw -B -o -q install -DskipTests -DskipITs" >&2; exit 2; }
command -v node >/dev/null || { echo "sdk/test.sh: node is missing" >&2; exit 2; }

TMP="$(mktemp -d "${TMPDIR:-/tmp}/outrun-sdk-test.XXXXXX")"
DEV_PID=""
cleanup() {
  local rc=$?
  if [[ -n "$DEV_PID" ]] && kill -0 "$DEV_PID" 2>/dev/null; then
    kill -TERM -- "-$DEV_PID" 2>/dev/null || kill -TERM "$DEV_PID" 2>/dev/null || true
    for _ in $(seq 1 30); do kill -0 "$DEV_PID" 2>/dev/null || break; sleep 0.5; done
    kill -KILL -- "-$DEV_PID" 2>/dev/null || true
  fi
  if [[ $rc -ne 0 && -f "$TMP/dev.log" ]]; then
    echo "--- last lines of outrun dev's log ($TMP/dev.log) ---" >&2
    tail -n 30 "$TMP/dev.log" >&2 || true
  else
    rm -rf "$TMP"
  fi
  exit $rc
}
trap cleanup EXIT
trap 'exit 130' INT TERM

START=$(date +%s)
PORT="$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"

# --- outrun dev, in its own process group --------------------------------------------------
mkdir -p "$TMP/data"
setsid java -jar "$JAR" dev --sandbox process --data-dir "$TMP/data" --port "$PORT" --bind 127.0.0.1 \
  --dashboard-port 0 >"$TMP/dev.log" 2>&1 </dev/null &
DEV_PID=$!
for _ in $(seq 1 180); do
  grep -q "Stop with Ctrl-C" "$TMP/dev.log" 2>/dev/null && break
  kill -0 "$DEV_PID" 2>/dev/null || { echo "sdk/test.sh: outrun dev exited early" >&2; exit 1; }
  sleep 0.5
done
grep -q "Stop with Ctrl-C" "$TMP/dev.log" || { echo "sdk/test.sh: outrun dev did not start within 90 s" >&2; exit 1; }

export OUTRUN_API="http://127.0.0.1:$PORT"
OUTRUN_TOKEN="$(cat "$TMP/data/dev-token")"
export OUTRUN_TOKEN
export OUTRUN_REQUIRE_LIVE=1
export NO_PROXY="127.0.0.1,localhost${NO_PROXY:+,$NO_PROXY}" no_proxy="127.0.0.1,localhost${no_proxy:+,$no_proxy}"
echo "== outrun dev up at $OUTRUN_API in $(( $(date +%s) - START )) s (pid $DEV_PID)"

# --- Python --------------------------------------------------------------------------------
# A fresh venv that sees the system's setuptools; `pip install --no-build-isolation --no-index`
# builds the package offline. setuptools < 70.1 needs the `wheel` package for that: the first
# python3 on the list that has both builds it; without one, the suite runs from the source tree
# (PYTHONPATH) and says so.
PY_CANDIDATES=("${PYTHON:-python3}" python3 /usr/bin/python3)
PYBUILD=""
for p in "${PY_CANDIDATES[@]}"; do
  if command -v "$p" >/dev/null && "$p" -c 'import setuptools, wheel' 2>/dev/null; then PYBUILD="$p"; break; fi
done
PYTHON_MODE=""
PY="${PYBUILD:-${PYTHON:-python3}}"
"$PY" -m venv --system-site-packages "$TMP/venv"
VPY="$TMP/venv/bin/python"
# pip builds in the source tree (build/, *.egg-info): build from a copy to leave the tree clean.
cp -r "$ROOT/sdk/python" "$TMP/python-src" && rm -rf "$TMP/python-src/build" "$TMP"/python-src/src/*.egg-info
if [[ -n "$PYBUILD" ]] && "$VPY" -m pip install -q --disable-pip-version-check --no-build-isolation --no-index \
      "$TMP/python-src" >"$TMP/pip.log" 2>&1; then
  PYTHON_MODE="installed into a venv ($("$VPY" --version), pip --no-build-isolation --no-index)"
  PYENV=()
else
  [[ -f "$TMP/pip.log" ]] && tail -n 5 "$TMP/pip.log" >&2
  PYTHON_MODE="FALLBACK: PYTHONPATH=sdk/python/src (pip could not build offline with $PY)"
  PYENV=(env "PYTHONPATH=$ROOT/sdk/python/src")
fi
echo "== Python client: $PYTHON_MODE"
(cd "$TMP" && "${PYENV[@]}" "$VPY" -c 'import outrun, sys; print("   import outrun ->", outrun.__file__)')
PY_RC=0
(cd "$ROOT" && "${PYENV[@]}" "$VPY" -m unittest discover -s sdk/python/tests -v 2>&1 | tee "$TMP/python.out" | grep -E '^(Ran|OK|FAILED)|(ERROR|FAIL):' ) || true
grep -qE '^OK' "$TMP/python.out" || { PY_RC=1; cat "$TMP/python.out" >&2; }

# --- TypeScript ----------------------------------------------------------------------------
# npm pack (what a registry would get), then install the tarball into a fresh npm project and
# run the suite there, so '@outrun/client' resolves to the installed copy.
mkdir -p "$TMP/npm"
TGZ="$(cd "$ROOT/sdk/typescript" && npm pack --silent --pack-destination "$TMP" 2>/dev/null | tail -n 1)"
(cd "$TMP/npm" && printf '{"name":"outrun-sdk-test","private":true,"type":"module"}\n' >package.json \
  && npm install --offline --no-audit --no-fund --silent "$TMP/$TGZ")
cp -r "$ROOT/sdk/typescript/test" "$TMP/npm/test"
echo "== TypeScript client: installed $TGZ into a fresh npm project ($(node --version))"
TS_RC=0
(cd "$TMP/npm" && node --test test/ >"$TMP/ts.out" 2>&1) || TS_RC=1
grep -E '^# (tests|pass|fail|skipped|cancelled)' "$TMP/ts.out" | sed 's/^/   /'
[[ $TS_RC -eq 0 ]] || grep -B2 -A25 '^\s*not ok' "$TMP/ts.out" >&2 || true

echo "== done in $(( $(date +%s) - START )) s: python $([[ $PY_RC -eq 0 ]] && echo PASS || echo FAIL), typescript $([[ $TS_RC -eq 0 ]] && echo PASS || echo FAIL)"
[[ $PY_RC -eq 0 && $TS_RC -eq 0 ]]
