"""Waits until every execution the workload saw acknowledged has ended (or --within seconds pass)."""
import argparse, json, sys, time, urllib.request

ap = argparse.ArgumentParser()
ap.add_argument("--api", required=True)
ap.add_argument("--token", required=True)
ap.add_argument("--run", required=True)
ap.add_argument("--within", type=int, default=60)
args = ap.parse_args()
ids = {h["executionId"] for h in map(json.loads, open(args.run + "/history.jsonl"))
       if h["op"] == "submit" and h["phase"] == "ok" and h.get("executionId")}
until = time.time() + args.within
while ids and time.time() < until:
    for i in list(ids):
        try:
            req = urllib.request.Request(f"{args.api}/v1/executions/{i}", headers={"Authorization": "Bearer " + args.token})
            with urllib.request.urlopen(req, timeout=5) as r:
                if json.loads(r.read()).get("status") in ("succeeded", "failed", "timed_out", "cancelled"):
                    ids.discard(i)
        except Exception:
            pass
    if ids:
        time.sleep(2)
print(f"quiesce: {len(ids)} not ended", file=sys.stderr)
time.sleep(8)  # webhooks of the last ends
sys.exit(1 if ids else 0)
