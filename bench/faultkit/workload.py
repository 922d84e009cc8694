"""The workload of bench/faults: seeded, bounded client processes that submit (with idempotency
keys, retried with the same key on 503, 5xx and timeouts), cancel some, write stdin to a few, and
make one schedule. Every call is logged to history.jsonl as an invoke and its outcome
(ok / fail / info) in the format of tools/faults-formats.md."""
import argparse, json, random, threading, time, urllib.error, urllib.request

ap = argparse.ArgumentParser()
ap.add_argument("--mode", default="quick")
ap.add_argument("--seed", type=int, required=True)
ap.add_argument("--api", required=True)
ap.add_argument("--token", required=True)
ap.add_argument("--hook", required=True)
ap.add_argument("--run", required=True)
args = ap.parse_args()

QUICK = args.mode == "quick"
DURATION_S = 125 if QUICK else 1800
MAX_SUBMITS = 200 if QUICK else 5000
PROCESSES = 4
MARKS = args.run + "/marks.jsonl"
HISTORY = args.run + "/history.jsonl"
OWNER = "faults"
SCHEDULE = "faults-tick"
lock = threading.Lock()
submitted = [0]
deadline = time.time() + DURATION_S


def now_ms():
    return int(time.time() * 1000)


def history(**fields):
    line = {"t": now_ms(), "process": None, "op": None, "phase": None, "key": None, "executionId": None,
            "status": None, "error": None, "webhook": False, "expectLines": None}
    line.update(fields)
    with lock, open(HISTORY, "a") as f:
        f.write(json.dumps(line) + "\n")


def command(lines, stdin=False):
    """A shell command that writes start, alive every ~100 ms and end marks, and prints `lines` lines."""
    read = "read x; " if stdin else ""
    return (
        f"f={MARKS}; h=$(ip netns identify $$ 2>/dev/null); h=${{h#orb-}}; "
        "e=$OUTRUN_EXECUTION_ID; a=${OUTRUN_ATTEMPT:-0}; "
        "m() { printf '{\"t\":%s,\"mark\":\"%s\",\"executionId\":\"%s\",\"attempt\":%s,\"host\":\"%s\"%s}\\n' "
        "\"$(date +%s%3N)\" \"$1\" \"$e\" \"$a\" \"$h\" \"$2\" >> \"$f\"; }; "
        f"m start ''; {read}i=0; while [ $i -lt {lines} ]; do i=$((i+1)); echo \"line $i\"; m alive ''; sleep 0.1; done; "
        "m end ',\"exit\":0'"
    )


def call(method, path, body=None, key=None, timeout=12):
    """(outcome, status, json, error code): outcome ok / fail / info."""
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(args.api + path, data=data, method=method)
    req.add_header("Authorization", "Bearer " + args.token)
    if data is not None:
        req.add_header("Content-Type", "application/json")
    if key:
        req.add_header("Idempotency-Key", key)
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return "ok", r.status, json.loads(r.read() or b"{}"), None
    except urllib.error.HTTPError as e:
        try:
            j = json.loads(e.read() or b"{}")
        except ValueError:
            j = {}
        err = j.get("error")
        code = err.get("code") if isinstance(err, dict) else err
        if e.code >= 500 or e.code == 408:
            return "info", e.code, j, code
        return "fail", e.code, j, code
    except Exception as e:  # timeout, reset, refused: unknown whether it happened
        return "info", None, {}, type(e).__name__


def retrying(pid, op, method, path, body=None, key=None, execution_id=None, webhook=False, expect=None,
             give_up_s=180, **extra):
    """Calls until an ok or a definite fail (4xx but 429), logging each attempt."""
    until = time.time() + give_up_s
    while True:
        history(process=pid, op=op, phase="invoke", key=key, executionId=execution_id, webhook=webhook,
                expectLines=expect, **extra)
        outcome, status, j, err = call(method, path, body, key)
        eid = j.get("executionId") or (j.get("execution") or {}).get("executionId") or execution_id
        history(process=pid, op=op, phase=outcome, key=key, executionId=eid, status=status, error=err,
                webhook=webhook, expectLines=expect, **extra)
        if outcome == "ok" or (outcome == "fail" and status != 429) or time.time() > until:
            return outcome, status, eid
        time.sleep(0.5 if outcome == "info" else 1.0)


def client(pid, rnd):
    while time.time() < deadline:
        with lock:
            if submitted[0] >= MAX_SUBMITS:
                return
            submitted[0] += 1
            n = submitted[0]
        key = f"faults-{args.seed}-{n}"
        lines = rnd.randint(10, 50)          # 1-5 s of work at ~100 ms a line
        webhook = rnd.random() < 0.2
        stdin = rnd.random() < 0.05
        cancel = rnd.random() < 0.1
        body = {"command": command(lines, stdin), "timeoutMs": 300000, "labels": {"faults": str(args.seed)}}
        if webhook:
            body["webhook"] = args.hook
        if stdin:
            body["stdin"] = True
        outcome, status, eid = retrying(pid, "submit", "POST", "/v1/executions", body, key, webhook=webhook,
                                        expect=lines)
        if outcome == "ok" and eid:
            if stdin:
                time.sleep(rnd.uniform(0.2, 1.0))
                retrying(pid, "stdin", "POST", f"/v1/executions/{eid}/stdin", {"text": "go\n"}, key,
                         execution_id=eid)
            if cancel:
                time.sleep(rnd.uniform(0.3, 3.0))
                retrying(pid, "cancel", "POST", f"/v1/executions/{eid}/cancel", None, key, execution_id=eid)
        time.sleep(rnd.uniform(0.5, 2.5))


def main():
    rnd = random.Random(args.seed)
    # Webhooks are signed with the owner's secret: there must be one before a submit names a webhook.
    retrying(0, "read", "POST", "/v1/webhook-secret")
    retrying(0, "schedule", "POST", "/v1/schedules",
                                  {"name": SCHEDULE, "everyMs": 5000,
                                   "submission": {"command": command(10), "timeoutMs": 300000}},
                                  schedule=SCHEDULE, owner=OWNER)
    threads = [threading.Thread(target=client, args=(p, random.Random(rnd.random())), daemon=True)
               for p in range(1, PROCESSES + 1)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    # The schedule stops firing before the quiet wait, so the final state holds still.
    retrying(0, "schedule", "POST", f"/v1/schedules/{SCHEDULE}/pause", give_up_s=60,
             schedule=SCHEDULE, owner=OWNER, detail="pause")
    print(json.dumps({"submits": submitted[0]}))


main()
