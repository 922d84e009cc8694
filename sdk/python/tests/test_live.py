"""Tests against a live `outrun dev` (sdk/test.sh starts one): OUTRUN_API and OUTRUN_TOKEN name it.

Without OUTRUN_API these tests are skipped, unless OUTRUN_REQUIRE_LIVE=1 (sdk/test.sh sets it),
which makes them fail instead.
"""

import os
import tempfile
import time
import unittest
import uuid

import outrun
from outrun import client as outrun_client

LIVE = bool(os.environ.get("OUTRUN_API"))
if not LIVE and os.environ.get("OUTRUN_REQUIRE_LIVE") == "1":
    raise RuntimeError("OUTRUN_REQUIRE_LIVE=1 but OUTRUN_API is not set")

CHATTY = "for i in $(seq 1 200); do echo line-$i; done; sleep 1; for i in $(seq 201 400); do echo line-$i; done"
CHATTY_TEXT = "".join(f"line-{i}\n" for i in range(1, 401))

# The fields this client sends and reads, by the OpenAPI schema that must declare them.
FIELDS_USED = {
    "SubmitRequest": list(outrun_client.SUBMIT_FIELDS.values()) + ["maxAttempts"],  # maxAttempts: via **extra below
    "Execution": list(outrun_client.EXECUTION_READS),
    "OutputChunk": list(outrun_client.CHUNK_READS),
    "StreamText": list(outrun_client.STREAM_TEXT_READS),
    "StreamDelta": list(outrun_client.STREAM_DELTA_READS),
    "Progress": list(outrun_client.PROGRESS_READS),
    "ErrorInfo": ["code", "message"],
    "Error": ["status", "error", "guidance"],
    "ExecutionPage": ["executions", "next"],
    "Artifact": ["name", "status", "size", "sha256", "detail", "url"],
    "InputFile": ["path", "content", "encoding"],
}
# Query parameters it sends, by route.
QUERY_USED = {
    ("/v1/executions/{id}", "get"): ["waitMs", "output"],
    ("/v1/executions/{id}/output", "get"): ["cursor", "waitMs", "maxBytes"],
    ("/v1/executions", "get"): ["status", "label", "limit", "after"],
}


@unittest.skipUnless(LIVE, "needs a live outrun dev: set OUTRUN_API and OUTRUN_TOKEN (sdk/test.sh does)")
class LiveTest(unittest.TestCase):

    @classmethod
    def setUpClass(cls):
        cls.o = outrun.Outrun()  # from OUTRUN_API / OUTRUN_TOKEN

    def test_run_and_read_back(self):
        ex = self.o.run("echo hello; echo oops >&2; exit 3", wait_ms=20_000, labels={"sdk": "python"})
        self.assertEqual(ex.status, "failed")
        self.assertEqual(ex.exit_code, 3)
        self.assertEqual(ex.stdout.text, "hello\n")
        self.assertEqual(ex.stderr.text, "oops\n")
        self.assertEqual(ex.error.code, "command_failed")
        self.assertTrue(ex.guidance)
        self.assertTrue(ex.cursor)
        back = self.o.get(ex.id)
        self.assertEqual((back.id, back.status, back.exit_code, back.stdout.text), (ex.id, "failed", 3, "hello\n"))
        self.assertEqual(back.labels, {"sdk": "python"})
        self.assertEqual(back.raw["executionId"], ex.id)

    def test_files_env_and_extra_fields(self):
        ex = self.o.run('cat in.txt; od -An -tx1 bin.dat | tr -d " \\n"; echo; echo "$TZ"',
                        files={"in.txt": "héllo\n", "bin.dat": b"\x00\xff"}, env={"TZ": "UTC"},
                        wait_ms=20_000, max_attempts=1)
        self.assertEqual(ex.status, "succeeded", ex.raw)
        self.assertEqual(ex.stdout.text, "héllo\n00ff\nUTC\n")
        self.assertEqual(ex.raw["maxAttempts"], 1)

    def test_follow_chatty_command_byte_exact(self):
        ex = self.o.run(CHATTY)
        chunks = list(self.o.follow(ex.id))
        text = "".join(c.stdout.text for c in chunks)
        self.assertEqual(text, CHATTY_TEXT)
        self.assertTrue(chunks[-1].done)
        self.assertEqual(chunks[-1].exit_code, 0)
        self.assertGreater(len([c for c in chunks if c.stdout.text]), 1, "the sleep should split the output")
        self.assertEqual("".join(c.stderr.text for c in chunks), "")
        # Paged by maxBytes, from the start again: the same bytes exactly once.
        paged = list(self.o.follow(ex.id, max_bytes=256))
        self.assertEqual("".join(c.stdout.text for c in paged), CHATTY_TEXT)
        self.assertGreater(len(paged), 10)
        self.assertEqual(self.o.get(ex.id, output="full").stdout.text, CHATTY_TEXT)

    def test_follow_from_a_submit_cursor(self):
        ex = self.o.run("echo one; sleep 1; echo two", wait_ms=10_000, wait_for="output")
        self.assertIn(ex.stdout.text, ("one\n", "one\ntwo\n"))
        rest = "".join(c.stdout.text for c in self.o.follow(ex.id, cursor=ex.cursor))
        self.assertEqual(ex.stdout.text + rest, "one\ntwo\n")

    def test_artifacts_download(self):
        ex = self.o.run("mkdir -p out && printf 'alpha\\nbeta\\n' > out/a.txt && echo b > out/b.txt && echo n > c.log",
                        artifacts=["out/*.txt"], wait_ms=20_000)
        self.assertEqual(ex.status, "succeeded", ex.raw)
        arts = {a.name: a for a in self.o.artifacts(ex.id)}
        self.assertEqual(set(arts), {"out/a.txt", "out/b.txt"})
        self.assertEqual(arts["out/a.txt"].status, "stored")
        self.assertEqual(arts["out/a.txt"].size, 11)
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "a.txt")
            self.assertEqual(self.o.download_artifact(ex.id, "out/a.txt", path), 11)
            with open(path, "rb") as f:
                self.assertEqual(f.read(), b"alpha\nbeta\n")
            with self.assertRaises(outrun.NotFound):
                self.o.download_artifact(ex.id, "out/nope.txt", os.path.join(d, "nope"))

    def test_cancel_running_sleep(self):
        ex = self.o.run("echo started; sleep 30", wait_ms=20_000, wait_for="output")
        self.assertEqual(ex.status, "running", ex.raw)
        c = self.o.cancel(ex.id)
        self.assertIn(c.status, ("running", "cancelled"))
        self.assertTrue(c.status == "cancelled" or c.raw.get("cancelRequested"))
        end = self.o.wait(ex.id, timeout=40)
        self.assertEqual(end.status, "cancelled")
        self.assertEqual(end.error.code, "cancelled")
        self.assertEqual(self.o.cancel(ex.id).status, "cancelled")  # again: 200, still cancelled

    def test_cancel_finished_is_conflict(self):
        ex = self.o.run("true", wait_ms=20_000)
        self.assertEqual(ex.status, "succeeded")
        with self.assertRaises(outrun.Conflict) as e:
            self.o.cancel(ex.id)
        self.assertEqual(e.exception.code, "execution_finished")
        self.assertEqual(e.exception.status, 409)

    def test_not_found(self):
        with self.assertRaises(outrun.NotFound) as e:
            self.o.get(str(uuid.uuid4()))
        err = e.exception
        self.assertIsInstance(err, outrun.OutrunError)
        self.assertEqual((err.status, err.code), (404, "execution_not_found"))
        self.assertTrue(err.message and err.guidance)

    def test_invalid_request(self):
        with self.assertRaises(outrun.InvalidRequest) as e:
            self.o.run("echo never", timeout_ms=-5)
        err = e.exception
        self.assertEqual((err.status, err.code), (400, "invalid_request"))
        self.assertIn("timeoutMs", err.message)
        self.assertTrue(err.guidance)

    def test_bad_token_is_identity_required(self):
        with self.assertRaises(outrun.IdentityRequired) as e:
            outrun.Outrun(token="otk_not-a-token").list()
        self.assertEqual(e.exception.code, "identity_required")

    def test_idempotency_key(self):
        key = "py-" + uuid.uuid4().hex
        a = self.o.run("echo once", idempotency_key=key, wait_ms=20_000)
        b = self.o.run("echo once", idempotency_key=key)
        self.assertEqual(a.id, b.id)
        with self.assertRaises(outrun.Conflict) as e:
            self.o.run("echo other", idempotency_key=key)
        self.assertEqual(e.exception.code, "idempotency_key_reused")

    def test_traceparent_reaches_the_command(self):
        parent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
        e = self.o.run('printf "%s" "$TRACEPARENT"', traceparent=parent, wait_ms=20_000)
        self.assertEqual(e.status, "succeeded")
        # A node that exports traces names its attempt's span; outrun dev (no OTEL_*) passes the caller's on.
        self.assertTrue(e.stdout.text.startswith("00-4bf92f3577b34da6a3ce929d0e0e4736-"), e.stdout.text)

    def test_list_by_label_and_pages(self):
        tag = uuid.uuid4().hex[:12]
        ids = [self.o.run(f"echo {i}", labels={"batch": tag}).id for i in range(3)]
        page = self.o.list(labels={"batch": tag}, limit=2)
        self.assertEqual([e.id for e in page.executions], ids[::-1][:2])  # newest first
        self.assertTrue(page.next)
        rest = self.o.list(labels={"batch": tag}, limit=2, after=page.next)
        self.assertEqual([e.id for e in rest.executions], [ids[0]])
        for i in ids:
            self.o.wait(i, timeout=30)
        self.assertTrue(all(e.status == "succeeded" for e in self.o.list(status="succeeded", labels={"batch": tag}).executions))

    def test_progress_and_a_child_from_inside_a_run(self):
        # Issue 31: a run reaches the API with its own token. Skipped while this server's runs lack it.
        probe = self.o.run('test -n "$OUTRUN_API_TOKEN" || echo no-token; test -n "$OUTRUN_API" || echo no-api;'
                           ' command -v python3 >/dev/null || echo no-python', wait_ms=20_000)
        if "no-token" in probe.stdout.text:
            self.skipTest("this server's runs get no OUTRUN_API_TOKEN (its nodes cannot sign)")
        if "no-api" in probe.stdout.text:
            self.skipTest("this server's runs cannot reach its API (no OUTRUN_API: host processes without network)")
        if "no-python" in probe.stdout.text:
            self.skipTest("no python3 inside a run")
        src = os.path.dirname(outrun.__file__)
        files = {}
        for name in ("__init__.py", "client.py", "errors.py", "submission.py", "batch.py"):
            with open(os.path.join(src, name), encoding="utf-8") as f:
                files["outrun/" + name] = f.read()
        files["report.py"] = (
            "import time, outrun\n"
            "outrun.progress(40, '2 of 5 shards')\n"
            "o = outrun.Outrun.from_run_env()\n"
            "child = o.run('echo from-child')\n"
            "print(o.wait(child.id, timeout=60).stdout.text, end='')\n"
            "print(child.id)\n"
            "time.sleep(2)\n")
        ex = self.o.run("python3 report.py", files=files)
        deadline = time.monotonic() + 60
        seen = self.o.get(ex.id)
        while seen.progress is None and not seen.done and time.monotonic() < deadline:
            time.sleep(0.2)
            seen = self.o.get(ex.id)
        self.assertIsNotNone(seen.progress, seen.raw)
        self.assertEqual((seen.progress.percent, seen.progress.message), (40, "2 of 5 shards"))
        end = self.o.wait(ex.id, timeout=90)
        self.assertEqual(end.status, "succeeded", end.stderr.text)
        text, child_id = end.stdout.text.splitlines()
        self.assertEqual(text, "from-child")
        child = self.o.get(child_id)
        self.assertEqual(child.parent_id, ex.id)
        self.assertEqual(child.labels.get("parent"), ex.id)

    def test_submit_batch_answers_each_item(self):
        tag = uuid.uuid4().hex[:12]
        key = "py-batch-" + uuid.uuid4().hex
        first = self.o.submit_batch([
            "echo one",
            {"command": "echo two", "labels": {"batch": tag}, "idempotency_key": key, "max_attempts": 1},
            {"command": "echo never", "timeout_ms": -5},
            {"command": "echo never", "wait_ms": 1000},
        ])
        self.assertEqual((first.accepted, first.refused), (2, 2), first.raw)
        self.assertEqual([r.index for r in first.results], [0, 1, 2, 3])
        self.assertEqual([r.status for r in first.results], [202, 202, 400, 400])
        bad = first.results[2].error
        self.assertIsInstance(bad, outrun.InvalidRequest)
        self.assertEqual(bad.code, "invalid_request")
        self.assertIn("timeoutMs", bad.message)
        self.assertTrue(bad.guidance)
        self.assertEqual(first.results[3].error.code, "wait_not_in_batch")
        one, two = first.executions
        self.assertEqual(one.status, "queued")
        self.assertFalse(first.results[1].replayed)
        self.assertEqual(self.o.wait(one.id, timeout=60).stdout.text, "one\n")
        done = self.o.wait(two.id, timeout=60)
        self.assertEqual((done.status, done.stdout.text, done.labels), ("succeeded", "two\n", {"batch": tag}))
        self.assertEqual(done.raw["maxAttempts"], 1)
        # The same key again: the first execution, replayed; with another command: refused, alone.
        again = self.o.submit_batch([{"command": "echo two", "labels": {"batch": tag}, "idempotency_key": key,
                                      "max_attempts": 1},
                                     {"command": "echo other", "idempotency_key": key}, "true"])
        # A repeat answers as a single submit would: 200 once that execution has ended.
        self.assertEqual([r.status for r in again.results], [200, 409, 202], again.raw)
        self.assertTrue(again.results[0].replayed)
        self.assertTrue(again.results[0].ok)
        self.assertTrue(again.guidance)
        self.assertEqual(again.results[0].execution.id, two.id)
        self.assertIsInstance(again.results[1].error, outrun.Conflict)
        self.assertEqual(again.results[1].error.code, "idempotency_key_reused")
        self.assertEqual((again.accepted, again.refused), (2, 1))

    def test_a_whole_batch_refused(self):
        with self.assertRaises(outrun.InvalidRequest) as e:
            self.o.submit_batch([])
        self.assertEqual((e.exception.status, e.exception.code), (400, "batch_invalid"))
        with self.assertRaises(outrun.OutrunError) as e:
            self.o.submit_batch(["true"] * 1001)
        self.assertEqual((e.exception.status, e.exception.code), (413, "batch_too_large"))
        with self.assertRaises(outrun.IdentityRequired):
            outrun.Outrun(token="otk_not-a-token").submit_batch(["true"])

    def test_schema_fields_exist_in_openapi(self):
        doc = self.o.openapi()
        schemas = doc["components"]["schemas"]
        for schema, fields in FIELDS_USED.items():
            props = set(schemas[schema]["properties"])
            missing = [f for f in fields if f not in props]
            self.assertEqual(missing, [], f"{schema} lacks fields the client uses")
        for (route, method), params in QUERY_USED.items():
            declared = {p["name"] for p in doc["paths"][route][method].get("parameters", []) if p.get("in") == "query"}
            self.assertEqual([p for p in params if p not in declared], [], f"{method} {route}")
        for route in ("/v1/executions/{id}/cancel", "/v1/executions/{id}/artifacts",
                      "/v1/executions/{id}/artifacts/{name}", "/v1/executions/{id}/progress", "/v1/executions/batch"):
            self.assertIn(route, doc["paths"])
        headers = {p["name"] for p in doc["paths"]["/v1/executions"]["post"]["parameters"] if p.get("in") == "header"}
        self.assertEqual([h for h in ("Idempotency-Key", "traceparent", "tracestate") if h not in headers], [])


if __name__ == "__main__":
    unittest.main()
