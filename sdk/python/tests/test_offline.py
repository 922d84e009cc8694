"""Behaviour a live server does not show on demand (503s, a restarted attempt, 429), against a
scripted fake server on loopback (http.server, no dependencies)."""

import json
import os
import socket
import threading
import unittest
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from unittest import mock

import outrun


class Fake:
    """Answers each request with the next scripted (status, body, headers) for its method and path."""

    def __init__(self):
        self.script = {}
        self.seen = []
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def _answer(self):
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                path = self.path.split("?")[0]
                fake.seen.append((self.command, self.path, dict(self.headers), body))
                queue = fake.script.get((self.command, path)) or [(404, _err("route_not_found", "no"), {})]
                status, payload, headers = queue.pop(0) if len(queue) > 1 else queue[0]
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                for k, v in headers.items():
                    self.send_header(k, v)
                self.end_headers()
                self.wfile.write(data)

            do_GET = do_POST = _answer

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()


def _err(code, message):
    return {"status": "error", "error": {"code": code, "message": message}, "guidance": "do " + code}


def _chunk(text, cursor, done=False, restarted=False, attempt=1):
    return {"executionId": "e1", "status": "succeeded" if done else "running", "attempt": attempt,
            "restarted": restarted, "stdout": {"text": text, "droppedBytes": 0, "totalBytes": 0},
            "stderr": {"text": "", "droppedBytes": 0, "totalBytes": 0}, "cursor": cursor, "done": done,
            "more": False, "exitCode": 0 if done else None, "guidance": "g"}


EXEC = {"executionId": "e1", "status": "queued", "cursor": "c0", "guidance": "g",
        "stdout": {"text": "", "truncated": False, "totalBytes": 0}, "stderr": {"truncated": False, "totalBytes": 0}}
UNAVAILABLE = (503, _err("database_unavailable", "down"), {"Retry-After": "0"})


class OfflineTest(unittest.TestCase):

    def setUp(self):
        self.fake = Fake()
        self.o = outrun.Outrun(self.fake.url, "tok", retries=2)

    def tearDown(self):
        self.fake.close()

    def test_get_is_retried_on_503(self):
        self.fake.script[("GET", "/v1/executions/e1")] = [UNAVAILABLE, UNAVAILABLE, (200, EXEC, {})]
        self.assertEqual(self.o.get("e1").id, "e1")
        self.assertEqual(len(self.fake.seen), 3)
        self.assertEqual(self.fake.seen[0][2]["Authorization"], "Bearer tok")

    def test_get_gives_up_after_the_retries(self):
        self.fake.script[("GET", "/v1/executions/e1")] = [UNAVAILABLE]
        with self.assertRaises(outrun.Unavailable) as e:
            self.o.get("e1")
        self.assertEqual((e.exception.code, e.exception.retry_after, e.exception.status), ("database_unavailable", 0.0, 503))
        self.assertEqual(len(self.fake.seen), 3)

    def test_submit_without_key_is_not_retried(self):
        self.fake.script[("POST", "/v1/executions")] = [UNAVAILABLE, (202, EXEC, {})]
        with self.assertRaises(outrun.Unavailable):
            self.o.run("echo hi")
        self.assertEqual(len(self.fake.seen), 1)

    def test_submit_with_key_is_retried(self):
        self.fake.script[("POST", "/v1/executions")] = [UNAVAILABLE, (202, EXEC, {})]
        self.assertEqual(self.o.run("echo hi", idempotency_key="k1", max_attempts=1).id, "e1")
        self.assertEqual(len(self.fake.seen), 2)
        method, path, headers, body = self.fake.seen[1]
        self.assertEqual(headers["Idempotency-Key"], "k1")
        self.assertEqual(json.loads(body), {"command": "echo hi", "maxAttempts": 1})

    def test_rate_limited(self):
        self.fake.script[("POST", "/v1/executions")] = [(429, _err("too_many_queued", "cap"), {"Retry-After": "10"})]
        with self.assertRaises(outrun.RateLimited) as e:
            self.o.run("echo hi", idempotency_key="k")
        self.assertEqual((e.exception.code, e.exception.retry_after), ("too_many_queued", 10.0))
        self.assertEqual(len(self.fake.seen), 1)

    def test_follow_reports_a_restarted_attempt(self):
        self.fake.script[("GET", "/v1/executions/e1/output")] = [
            (200, _chunk("a\n", "c1"), {}), (200, _chunk("", "c2"), {}),
            (200, _chunk("a\n", "c3", restarted=True, attempt=2), {}), (200, _chunk("b\n", "c4", done=True, attempt=2), {})]
        chunks = list(self.o.follow("e1"))
        self.assertEqual([(c.stdout.text, c.restarted, c.done) for c in chunks],
                         [("a\n", False, False), ("a\n", True, False), ("b\n", False, True)])
        cursors = [p for m, p, h, b in self.fake.seen]
        self.assertEqual(cursors[0], "/v1/executions/e1/output?waitMs=30000")
        self.assertTrue(cursors[1].startswith("/v1/executions/e1/output?cursor=c1&"))
        self.assertTrue(cursors[3].startswith("/v1/executions/e1/output?cursor=c3&"))

    def test_unreachable(self):
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
        s.close()  # nothing listens there now
        o = outrun.Outrun(f"http://127.0.0.1:{port}", "t", retries=1)
        with self.assertRaises(outrun.Unreachable) as e:
            o.get("e1")
        self.assertIsNone(e.exception.status)
        self.assertIsInstance(e.exception, outrun.OutrunError)

    def test_answer_without_error_shape(self):
        self.fake.script[("GET", "/v1/executions/e1")] = [(502, {"oops": 1}, {})]
        with self.assertRaises(outrun.Unreachable) as e:
            self.o.get("e1")
        self.assertEqual(e.exception.status, 502)

    def test_identity_and_cancel_with_parent_in_the_submit(self):
        self.fake.script[("POST", "/v1/executions")] = [(202, EXEC, {})]
        self.o.run("a", identity=True)
        self.o.run("b", identity="https://svc.example", cancel_with_parent=False)
        self.o.run("c", identity={"audience": "x"})
        self.o.run("d", identity=False)
        bodies = [json.loads(seen[3]) for seen in self.fake.seen]
        self.assertEqual(bodies[0], {"command": "a", "identity": {}})
        self.assertEqual(bodies[1], {"command": "b", "identity": {"audience": "https://svc.example"},
                                     "cancelWithParent": False})
        self.assertEqual(bodies[2]["identity"], {"audience": "x"})
        self.assertNotIn("identity", bodies[3])

    def test_execution_reads_parent_and_progress(self):
        ex = outrun.Execution.of(dict(EXEC, parentId="p1", progress={"percent": 40, "message": "2 of 5",
                                                                      "at": "2026-01-01T00:00:00Z"}))
        self.assertEqual(ex.parent_id, "p1")
        self.assertEqual((ex.progress.percent, ex.progress.message), (40, "2 of 5"))
        self.assertIsNone(outrun.Execution.of(EXEC).progress)

    def test_progress_from_the_run_env_and_retried_when_too_fast(self):
        progress = {"percent": 40, "message": "2 of 5", "at": "2026-01-01T00:00:00Z"}
        self.fake.script[("POST", "/v1/executions/e1/progress")] = [
            (429, _err("progress_too_fast", "slow down"), {"Retry-After": "0"}), (200, progress, {})]
        env = {"OUTRUN_API": self.fake.url, "OUTRUN_API_TOKEN": "run-tok", "OUTRUN_EXECUTION_ID": "e1",
               "OUTRUN_TOKEN": "owner-tok"}
        with mock.patch.dict(os.environ, env):
            got = outrun.progress(40, "2 of 5")
            self.assertEqual(outrun.Outrun.from_run_env().token, "run-tok")
        self.assertEqual((got.percent, got.message), (40, "2 of 5"))
        self.assertEqual(len(self.fake.seen), 2)
        method, path, headers, body = self.fake.seen[1]
        self.assertEqual((method, path), ("POST", "/v1/executions/e1/progress"))
        self.assertEqual(headers["Authorization"], "Bearer run-tok")
        self.assertEqual(json.loads(body), {"percent": 40, "message": "2 of 5"})

    def test_outside_a_run(self):
        env = {k: v for k, v in os.environ.items() if k not in ("OUTRUN_API_TOKEN", "OUTRUN_EXECUTION_ID")}
        with mock.patch.dict(os.environ, env, clear=True):
            with self.assertRaises(outrun.OutrunError) as e:
                outrun.Outrun.from_run_env()
            self.assertEqual(e.exception.code, "not_in_run")
            with self.assertRaises(outrun.OutrunError):
                self.o.progress(10)
        with self.assertRaises(ValueError):
            self.o.progress(id="e1")

    def test_the_run_token_is_the_default_inside_a_run(self):
        with mock.patch.dict(os.environ, {"OUTRUN_API_TOKEN": "run-tok"}):
            os.environ.pop("OUTRUN_TOKEN", None)
            self.assertEqual(outrun.Outrun(self.fake.url).token, "run-tok")
            self.assertEqual(outrun.Outrun(self.fake.url, "given").token, "given")

    # --- batches ---------------------------------------------------------------------------------

    def test_submit_batch_sends_each_item_and_reads_each_result(self):
        answer = {"accepted": 2, "refused": 1, "results": [
            {"index": 0, "status": 202, "execution": EXEC, "replayed": False},
            {"index": 1, "status": 400, "error": _err("invalid_request", "timeoutMs: must be at least 1, got -5")},
            {"index": 2, "status": 202, "execution": dict(EXEC, executionId="e2"), "replayed": True}]}
        self.fake.script[("POST", "/v1/executions/batch")] = [(200, answer, {})]
        got = self.o.submit_batch(
            ["echo a",
             {"command": "echo b", "timeout_ms": -5, "labels": {"k": "v"}, "files": {"x.bin": b"\x00"}},
             {"command": "echo c", "idempotency_key": "k3", "identity": True, "maxAttempts": 1}],
            traceparent="00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")
        method, path, headers, body = self.fake.seen[0]
        headers = {k.lower(): v for k, v in headers.items()}
        self.assertEqual((method, path), ("POST", "/v1/executions/batch"))
        self.assertEqual(headers["content-type"], "application/json")
        self.assertEqual(headers["traceparent"], "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")
        self.assertNotIn("idempotency-key", headers)
        self.assertEqual(json.loads(body), {"submissions": [
            {"command": "echo a"},
            {"command": "echo b", "timeoutMs": -5, "labels": {"k": "v"},
             "files": [{"path": "x.bin", "content": "AA==", "encoding": "base64"}]},
            {"command": "echo c", "identity": {}, "maxAttempts": 1, "idempotencyKey": "k3"}]})
        self.assertEqual((got.accepted, got.refused), (2, 1))
        self.assertEqual([(r.index, r.status, r.ok, r.replayed) for r in got.results],
                         [(0, 202, True, False), (1, 400, False, False), (2, 202, True, True)])
        self.assertEqual([e.id for e in got.executions], ["e1", "e2"])
        bad = got.errors[0]
        self.assertIsInstance(bad.error, outrun.InvalidRequest)
        self.assertEqual((bad.index, bad.error.status, bad.error.code), (1, 400, "invalid_request"))
        self.assertIn("timeoutMs", bad.error.message)
        self.assertEqual(bad.error.guidance, "do invalid_request")

    def test_a_whole_batch_refused_raises_and_is_not_retried_without_keys(self):
        self.fake.script[("POST", "/v1/executions/batch")] = [(413, _err("batch_too_large", "1001 > 1000"), {})]
        with self.assertRaises(outrun.OutrunError) as e:
            self.o.submit_batch(["true"] * 3)
        self.assertEqual((e.exception.status, e.exception.code), (413, "batch_too_large"))
        self.fake.script[("POST", "/v1/executions/batch")] = [(503, _err("database_disk_full", "full"),
                                                              {"Retry-After": "30"})]
        with self.assertRaises(outrun.Unavailable) as e:
            self.o.submit_batch(["true", {"command": "true", "idempotency_key": "k"}])
        self.assertEqual((e.exception.code, e.exception.retry_after), ("database_disk_full", 30.0))
        self.fake.script[("POST", "/v1/executions/batch")] = [UNAVAILABLE, (200, {"results": []}, {})]
        with self.assertRaises(outrun.Unavailable):
            self.o.submit_batch(["true", {"command": "true", "idempotency_key": "k"}])
        self.assertEqual(len(self.fake.seen), 3, "one request each: not every item had a key")

    def test_a_batch_whose_every_item_has_a_key_is_retried(self):
        ok = {"accepted": 1, "refused": 0, "results": [{"index": 0, "status": 202, "execution": EXEC}]}
        self.fake.script[("POST", "/v1/executions/batch")] = [UNAVAILABLE, (200, ok, {})]
        got = self.o.submit_batch([{"command": "true", "idempotencyKey": "k1"}])
        self.assertEqual(got.executions[0].id, "e1")
        self.assertEqual(len(self.fake.seen), 2)
        self.assertEqual(self.fake.seen[0][3], self.fake.seen[1][3], "the same body again")

    def test_batch_arguments_are_checked_before_sending(self):
        with self.assertRaises(TypeError):
            self.o.submit_batch("echo a")  # a string is no list of submissions
        with self.assertRaises(TypeError):
            self.o.submit_batch([42])
        with self.assertRaises(TypeError) as e:
            self.o.submit_batch([{"command": "a", "traceparent": "00-x"}])
        self.assertIn("submissions[0]", str(e.exception))
        self.assertEqual(self.fake.seen, [])


if __name__ == "__main__":
    unittest.main()
