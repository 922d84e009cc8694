"""Counts of a bench/faults run without verdicts: stands in for HistoryChecker until it is merged."""
import argparse, json

ap = argparse.ArgumentParser()
ap.add_argument("--run", required=True)
ap.add_argument("--seed", type=int)
ap.add_argument("--failover-s", type=float)
args = ap.parse_args()
hist = [json.loads(l) for l in open(args.run + "/history.jsonl")]
acked = {h["key"] for h in hist if h["op"] == "submit" and h["phase"] == "ok" and h["status"] in (200, 202)}
marks = [json.loads(l) for l in open(args.run + "/marks.jsonl") if l.strip()]
print(json.dumps({"checker": "missing (HistoryChecker not merged): counts only", "seed": args.seed,
                  "acknowledged": len(acked),
                  "submit_503": sum(1 for h in hist if h["op"] == "submit" and h["status"] == 503),
                  "submit_unanswered": sum(1 for h in hist if h["op"] == "submit" and h["phase"] == "info" and h["status"] is None),
                  "started": len({(m["executionId"], m["attempt"]) for m in marks if m["mark"] == "start"}),
                  "ended": len({(m["executionId"], m["attempt"]) for m in marks if m["mark"] == "end"}),
                  "webhooks": sum(1 for _ in open(args.run + "/webhooks.jsonl")),
                  "failover_s": args.failover_s,
                  "nemesis": [json.loads(l) for l in open(args.run + "/nemesis.jsonl")]}, indent=1))
