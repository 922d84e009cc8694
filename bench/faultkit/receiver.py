"""The webhook receiver of bench/faults: logs every delivery to webhooks.jsonl (one line each)."""
import argparse, json, threading, time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

ap = argparse.ArgumentParser()
ap.add_argument("--bind", required=True)
ap.add_argument("--port", type=int, default=9000)
ap.add_argument("--out", required=True)
args = ap.parse_args()
lock = threading.Lock()


class Hook(BaseHTTPRequestHandler):
    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        try:
            event = json.loads(body)
        except ValueError:
            event = {}
        data = event.get("data") or {}
        line = {"t": int(time.time() * 1000), "webhookId": self.headers.get("webhook-id"),
                "executionId": data.get("executionId") or data.get("id") or event.get("executionId"),
                "status": data.get("status") or event.get("status"), "type": event.get("type")}
        with lock, open(args.out, "a") as f:
            f.write(json.dumps(line) + "\n")
        self.send_response(204)
        self.end_headers()

    def log_message(self, *a):
        pass


ThreadingHTTPServer((args.bind, args.port), Hook).serve_forever()
