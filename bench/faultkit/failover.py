"""failover_s of a bench/faults run: from the primary's death (the first kill-primary in
nemesis.jsonl) to the last submit answered 503 or unanswered in the chain of such answers that
began with it (answers at most 15 s apart). 0 when no primary was killed or no submit failed."""
import argparse, json

ap = argparse.ArgumentParser()
ap.add_argument("--run", required=True)
args = ap.parse_args()
kills = [json.loads(l) for l in open(args.run + "/nemesis.jsonl") if '"kill-primary"' in l]
kills = [k for k in kills if k["target"] != "none"]
if not kills:
    print(0)
    raise SystemExit
kill = kills[0]["t"]
bad = sorted(h["t"] for h in map(json.loads, open(args.run + "/history.jsonl"))
             if h["op"] == "submit" and h["phase"] == "info" and h["t"] >= kill)
last = kill
for t in bad:
    if t - last > 15000:
        break
    last = t
print(round((last - kill) / 1000, 1))
