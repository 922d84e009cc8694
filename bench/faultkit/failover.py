"""failover_s of a bench/faults run: from a primary's death (a kill-primary in nemesis.jsonl) to
the last submit answered 503 or unanswered in the chain of such answers that began with it
(answers at most 15 s apart); the worst over the run's kills, each printed on stderr. 0 when no
primary was killed or no submit failed."""
import argparse, json, sys

ap = argparse.ArgumentParser()
ap.add_argument("--run", required=True)
args = ap.parse_args()
kills = [json.loads(l) for l in open(args.run + "/nemesis.jsonl") if '"kill-primary"' in l]
kills = [k["t"] for k in kills if k["target"] != "none"]
bad = sorted(h["t"] for h in map(json.loads, open(args.run + "/history.jsonl"))
             if h["op"] == "submit" and h["phase"] == "info")
worst = 0.0
for kill in kills:
    last = kill
    for t in (t for t in bad if t >= kill):
        if t - last > 15000:
            break
        last = t
    window = round((last - kill) / 1000, 1)
    print(f"failover: primary killed at {kill}: submits failed for {window} s", file=sys.stderr)
    worst = max(worst, window)
print(worst)
