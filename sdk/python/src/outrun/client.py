"""The Outrun client, on the standard library only (urllib and json)."""

import json
import os
import random
import socket
import time
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass, field
from email.utils import parsedate_to_datetime
from typing import Any, Dict, Iterator, List, Mapping, Optional, Sequence, Union

from .batch import BatchItem, BatchResult
from .errors import OutrunError, Unreachable, error_for
from .submission import SUBMIT_FIELDS, batch_item, submission  # noqa: F401 (SUBMIT_FIELDS: read by the tests)

__all__ = ["Outrun", "Execution", "OutputChunk", "StreamText", "StreamDelta", "ErrorInfo", "Artifact", "Page",
           "Progress", "TERMINAL", "progress", "BatchItem", "BatchResult"]

#: States in which an execution has ended.
TERMINAL = frozenset({"succeeded", "failed", "timed_out", "cancelled"})

#: Fields of an ``Execution`` answer this client reads.
EXECUTION_READS = ("executionId", "status", "exitCode", "attempt", "labels", "stdout", "stderr", "cursor",
                   "guidance", "error", "command", "createdAt", "startedAt", "finishedAt", "durationMs", "parentId",
                   "progress")
#: Fields of ``Progress`` (an execution's latest report of itself) it reads.
PROGRESS_READS = ("percent", "message", "at")
#: Fields of an ``OutputChunk`` answer this client reads.
CHUNK_READS = ("executionId", "status", "attempt", "restarted", "stdout", "stderr", "cursor", "done", "more",
               "exitCode", "guidance")
#: Fields of ``StreamText`` (an execution's stdout / stderr) and ``StreamDelta`` (a chunk's) it reads.
STREAM_TEXT_READS = ("text", "truncated", "totalBytes", "omittedBytes")
STREAM_DELTA_READS = ("text", "droppedBytes", "totalBytes")

_SLACK_S = 30.0  # on top of a long poll's wait before giving up on an answer
#: Inside a run (issue 31): where its API is, its own token, and its execution's id.
RUN_ENV = ("OUTRUN_API", "OUTRUN_API_TOKEN", "OUTRUN_EXECUTION_ID")
_DEFAULT_API = "http://localhost:8080"


@dataclass
class StreamText:
    """One stream of an execution answer: its text (as the answer shows it) and byte counts."""
    text: str = ""
    truncated: bool = False
    total_bytes: int = 0
    omitted_bytes: int = 0

    @classmethod
    def of(cls, d: Optional[Mapping[str, Any]]) -> "StreamText":
        d = d or {}
        return cls(d.get("text") or "", bool(d.get("truncated", False)), int(d.get("totalBytes") or 0),
                   int(d.get("omittedBytes") or 0))


@dataclass
class StreamDelta:
    """One stream of an output chunk: only the text after the cursor."""
    text: str = ""
    dropped_bytes: int = 0
    total_bytes: int = 0

    @classmethod
    def of(cls, d: Optional[Mapping[str, Any]]) -> "StreamDelta":
        d = d or {}
        return cls(d.get("text") or "", int(d.get("droppedBytes") or 0), int(d.get("totalBytes") or 0))


@dataclass
class ErrorInfo:
    """Why an execution did not succeed: ``command_failed``, ``timed_out``, ``cancelled``, ..."""
    code: str
    message: str


@dataclass
class Progress:
    """The latest progress a run reported of itself (``percent`` 0-100 and/or ``message``), and when."""
    percent: Optional[int] = None
    message: Optional[str] = None
    at: Optional[str] = None

    @classmethod
    def of(cls, d: Optional[Mapping[str, Any]]) -> Optional["Progress"]:
        if not isinstance(d, Mapping):
            return None
        return cls(d.get("percent"), d.get("message"), d.get("at"))


@dataclass
class Execution:
    """An execution as the API answered it; ``raw`` holds the whole answer."""
    id: str
    status: str
    exit_code: Optional[int]
    stdout: StreamText
    stderr: StreamText
    cursor: Optional[str]
    guidance: Optional[str]
    error: Optional[ErrorInfo]
    attempt: Optional[int] = None
    labels: Dict[str, str] = field(default_factory=dict)
    #: The parent's id when a run submitted this one (a child), else None.
    parent_id: Optional[str] = None
    #: What the run last reported of itself (:func:`progress`), else None.
    progress: Optional[Progress] = None
    raw: Dict[str, Any] = field(default_factory=dict, repr=False)

    @property
    def done(self) -> bool:
        """True once it ended: succeeded, failed, timed_out or cancelled."""
        return self.status in TERMINAL

    @property
    def succeeded(self) -> bool:
        return self.status == "succeeded"

    @classmethod
    def of(cls, d: Mapping[str, Any]) -> "Execution":
        err = d.get("error")
        return cls(id=d.get("executionId", ""), status=d.get("status", ""), exit_code=d.get("exitCode"),
                   stdout=StreamText.of(d.get("stdout")), stderr=StreamText.of(d.get("stderr")),
                   cursor=d.get("cursor"), guidance=d.get("guidance"),
                   error=ErrorInfo(err.get("code", ""), err.get("message", "")) if isinstance(err, dict) else None,
                   attempt=d.get("attempt"), labels=dict(d.get("labels") or {}), parent_id=d.get("parentId"),
                   progress=Progress.of(d.get("progress")), raw=dict(d))


@dataclass
class OutputChunk:
    """The output after a cursor. ``restarted``: a lost attempt was run again and its output
    starts again from the beginning (drop what you kept). ``done``: the last chunk."""
    id: str
    status: str
    attempt: int
    restarted: bool
    stdout: StreamDelta
    stderr: StreamDelta
    cursor: str
    done: bool
    more: bool
    exit_code: Optional[int]
    guidance: Optional[str]
    raw: Dict[str, Any] = field(default_factory=dict, repr=False)

    @classmethod
    def of(cls, d: Mapping[str, Any]) -> "OutputChunk":
        return cls(id=d.get("executionId", ""), status=d.get("status", ""), attempt=int(d.get("attempt") or 0),
                   restarted=bool(d.get("restarted", False)), stdout=StreamDelta.of(d.get("stdout")),
                   stderr=StreamDelta.of(d.get("stderr")), cursor=d.get("cursor", ""),
                   done=bool(d.get("done", False)), more=bool(d.get("more", False)), exit_code=d.get("exitCode"),
                   guidance=d.get("guidance"), raw=dict(d))


@dataclass
class Artifact:
    """A file kept after the command ended (``status`` ``stored``), or one that was not, with ``detail``."""
    name: str
    status: str
    size: int
    sha256: Optional[str] = None
    detail: Optional[str] = None
    url: Optional[str] = None


@dataclass
class Page:
    """A page of executions (newest first, without output); pass ``next`` as ``after`` for the next one."""
    executions: List[Execution]
    next: Optional[str]


def _retry_after(value: Optional[str]) -> Optional[float]:
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        try:
            return max(0.0, parsedate_to_datetime(value).timestamp() - time.time())
        except (TypeError, ValueError):
            return None


def _trace_headers(traceparent: Optional[str], tracestate: Optional[str]) -> Dict[str, str]:
    headers = {"Content-Type": "application/json"}
    if traceparent is not None:
        headers["traceparent"] = traceparent
    if tracestate is not None:
        headers["tracestate"] = tracestate
    return headers


class Outrun:
    """A client of one Outrun API with one token.

    ``api`` defaults to ``$OUTRUN_API`` (else ``http://localhost:8080``), ``token`` to
    ``$OUTRUN_TOKEN`` (else, inside a run, the run's own ``$OUTRUN_API_TOKEN``; else the file
    ``.outrun/dev-token`` if there is one, as ``outrun dev`` writes it). Inside a run,
    :meth:`from_run_env` says so explicitly. ``retries``: how many times a safe request is tried again on a 503 or a lost
    connection (GETs, and a submit only when it carries an idempotency key).
    """

    def __init__(self, api: Optional[str] = None, token: Optional[str] = None, *, retries: int = 3,
                 timeout: float = _SLACK_S, max_retry_wait: float = 30.0):
        api = api or os.environ.get("OUTRUN_API") or _DEFAULT_API
        self.api = api.rstrip("/")
        if token is None:
            token = os.environ.get("OUTRUN_TOKEN") or os.environ.get("OUTRUN_API_TOKEN")
        if token is None and os.path.isfile(os.path.join(".outrun", "dev-token")):
            with open(os.path.join(".outrun", "dev-token"), encoding="utf-8") as f:
                token = f.read()
        self.token = token.strip() if token else None
        self.retries = retries
        self.timeout = timeout
        self.max_retry_wait = max_retry_wait

    def __repr__(self) -> str:
        return f"Outrun({self.api!r})"

    @classmethod
    def from_run_env(cls, **kwargs: Any) -> "Outrun":
        """A client for code running inside an Outrun run: ``$OUTRUN_API`` with the run's own token
        ``$OUTRUN_API_TOKEN``. It acts as the run's owner, within the run's scope: submit children
        (labelled ``parent=<id>``, cancelled with the run unless ``cancel_with_parent=False``),
        read, wait for and cancel them, read the run itself, report :meth:`progress`. Raises
        :class:`OutrunError` (code ``not_in_run``) outside a run."""
        api, token = os.environ.get("OUTRUN_API"), os.environ.get("OUTRUN_API_TOKEN")
        if not api or not token:
            raise OutrunError("not inside an Outrun run: OUTRUN_API and OUTRUN_API_TOKEN are set only in the"
                              " environment of a run whose node can sign run tokens", code="not_in_run")
        return cls(api, token, **kwargs)

    # --- executions --------------------------------------------------------------------------

    def run(self, command: str, wait_ms: Optional[int] = None, wait_for: Optional[str] = None,
            files: Union[Sequence[Mapping[str, Any]], Mapping[str, Union[str, bytes]], None] = None,
            artifacts: Optional[Sequence[str]] = None, workspace: Optional[str] = None,
            env: Optional[Mapping[str, str]] = None, labels: Optional[Mapping[str, str]] = None,
            timeout_ms: Optional[int] = None, idempotency_key: Optional[str] = None,
            traceparent: Optional[str] = None, tracestate: Optional[str] = None,
            identity: Union[bool, str, Mapping[str, Any], None] = None,
            **extra: Any) -> Execution:
        """Submits ``command`` (bash source). With ``wait_ms`` the answer waits (up to 30 s) for the
        end, or with ``wait_for="output"`` for the first output. ``files``: a list of the API's
        file objects, or ``{path: str | bytes}``. Any other submit field goes in ``extra``, in
        snake_case or camelCase (``max_attempts=1``, ``delay_ms=60000``, ``retry={...}``).
        With ``idempotency_key``, a repeat returns the first execution and starts nothing (and
        the submit is retried on a 503 or a lost connection). ``traceparent``/``tracestate``
        (W3C headers, e.g. from your OpenTelemetry span) put the execution's spans in your trace;
        the command gets them as ``TRACEPARENT``/``TRACESTATE``. ``identity``: ``True`` or an
        audience (``"https://my-service.example"``) gives the command ``$OUTRUN_ID_TOKEN``, a JWT
        signed by the fleet's key that a service verifies against the API's
        ``/.well-known/jwks.json`` (``True``: the operator's default audience). Inside a run
        (:meth:`from_run_env`) the execution is a child; ``cancel_with_parent=False`` lets it
        outlive the run."""
        body = submission(command, wait_ms=wait_ms, wait_for=wait_for, files=files, artifacts=artifacts,
                          workspace=workspace, env=env, labels=labels, timeout_ms=timeout_ms, identity=identity,
                          **extra)
        headers = _trace_headers(traceparent, tracestate)
        if idempotency_key is not None:
            headers["Idempotency-Key"] = idempotency_key
        answer = self._call("POST", "/v1/executions", body=body, headers=headers, wait_ms=wait_ms,
                            retry=idempotency_key is not None)
        return Execution.of(answer)

    def submit_batch(self, submissions: Sequence[Union[str, Mapping[str, Any]]],
                     traceparent: Optional[str] = None, tracestate: Optional[str] = None) -> BatchResult:
        """Submits up to 1000 commands in one request (``POST /v1/executions/batch``), stored in one
        transaction. Each submission is a command string or a dict of :meth:`run`'s keyword
        arguments (``{"command": ..., "labels": {...}, "idempotency_key": "k1", "max_attempts": 1}``;
        snake_case or camelCase), without ``wait_ms``: the server refuses a wait per item.

        A bad item fails only itself: the answer has one :class:`BatchItem` per submission, in
        order, with the execution (``status`` 202) or the error a single submit would have
        raised for it. The whole request raises (and stores nothing) when it is malformed
        (``batch_invalid``), too large (``batch_too_large``: over 1000 items or the body limit),
        or the API cannot take it (401, 403, 503). ``traceparent``/``tracestate`` apply to
        every item. Retried on a 503 or a lost connection only when every item carries an
        idempotency key (a repeat answers the first executions, ``replayed``)."""
        if isinstance(submissions, (str, bytes, Mapping)):
            raise TypeError("submit_batch takes a list of submissions (command strings or dicts of run()'s arguments)")
        items = [batch_item(s, i) for i, s in enumerate(submissions)]
        headers = _trace_headers(traceparent, tracestate)
        answer = self._call("POST", "/v1/executions/batch", body={"submissions": items}, headers=headers,
                            retry=bool(items) and all("idempotencyKey" in item for item in items))
        return BatchResult.of(answer, Execution.of)

    def get(self, id: str, wait_ms: Optional[int] = None, output: Optional[str] = None) -> Execution:
        """The execution; with ``wait_ms`` the answer comes as soon as it ends (or at the end of the
        wait). ``output``: ``none``, ``tail`` (the server's default: each stream's last 4 KiB) or ``full``."""
        return Execution.of(self._call("GET", f"/v1/executions/{_seg(id)}",
                                       query={"waitMs": wait_ms, "output": output}, wait_ms=wait_ms))

    def wait(self, id: str, timeout: Optional[float] = None, output: Optional[str] = None) -> Execution:
        """Polls until the execution ended (or ``timeout`` seconds passed) and returns it."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            left = 30_000 if deadline is None else int(max(0.0, deadline - time.monotonic()) * 1000)
            ex = self.get(id, wait_ms=min(30_000, left) or None, output=output)
            if ex.done or (deadline is not None and time.monotonic() >= deadline):
                return ex

    def output(self, id: str, cursor: Optional[str] = None, wait_ms: Optional[int] = None,
               max_bytes: Optional[int] = None) -> OutputChunk:
        """Only the output after ``cursor`` (None: from the start); with ``wait_ms``, a long poll
        answered as soon as there is new output or the end; ``max_bytes`` bounds each stream's
        text (then ``more`` says ask again at once with the new cursor)."""
        return OutputChunk.of(self._call("GET", f"/v1/executions/{_seg(id)}/output",
                                         query={"cursor": cursor, "waitMs": wait_ms, "maxBytes": max_bytes},
                                         wait_ms=wait_ms))

    def follow(self, id: str, cursor: Optional[str] = None, wait_ms: int = 30_000,
               max_bytes: Optional[int] = None) -> Iterator[OutputChunk]:
        """Yields the output as it is printed, by cursor: each chunk that carries text, a
        ``restarted`` chunk (a lost attempt ran again: its output starts over, discard what you
        kept of the earlier attempt), and the last chunk (``done``, with ``exit_code``). Never
        repeats or skips a byte. Start after ``cursor`` (e.g. a submit's) or from the beginning."""
        while True:
            chunk = self.output(id, cursor=cursor, wait_ms=wait_ms, max_bytes=max_bytes)
            cursor = chunk.cursor or cursor
            if chunk.stdout.text or chunk.stderr.text or chunk.restarted or chunk.done:
                yield chunk
            if chunk.done:
                return

    def cancel(self, id: str) -> Execution:
        """Cancels: a queued execution at once (``cancelled``), a running one within seconds
        (``cancel_requested``); one that already ended otherwise raises Conflict ``execution_finished``."""
        return Execution.of(self._call("POST", f"/v1/executions/{_seg(id)}/cancel"))

    def progress(self, percent: Optional[float] = None, message: Optional[str] = None,
                 id: Optional[str] = None) -> Progress:
        """Reports this run's progress (``percent`` 0-100 and/or ``message``, up to 500 characters):
        it shows in every poll, in ``outrun status`` and the dashboard; the latest is kept. Only the
        run's own token may (a client from :meth:`from_run_env`); ``id`` defaults to
        ``$OUTRUN_EXECUTION_ID``. A report sooner than 250 ms after the last is tried again a
        little later (twice), then raises :class:`RateLimited` ``progress_too_fast``."""
        id = id or os.environ.get("OUTRUN_EXECUTION_ID")
        if not id:
            raise OutrunError("no execution to report for: OUTRUN_EXECUTION_ID is unset (not inside a run);"
                              " pass id=", code="not_in_run")
        if percent is None and message is None:
            raise ValueError("a progress report needs a percent (0 to 100), a message, or both")
        body: Dict[str, Any] = {}
        if percent is not None:
            body["percent"] = percent
        if message is not None:
            body["message"] = message
        for attempt in range(3):
            try:
                answer = self._call("POST", f"/v1/executions/{_seg(id)}/progress", body=body,
                                    headers={"Content-Type": "application/json"})
                return Progress.of(answer) or Progress(percent, message)
            except OutrunError as e:
                if e.code != "progress_too_fast" or attempt == 2:
                    raise
                time.sleep(min(1.0, e.retry_after if e.retry_after else 0.25) + 0.05)
        raise AssertionError("unreachable")

    def list(self, status: Optional[str] = None, labels: Optional[Mapping[str, str]] = None,
             limit: Optional[int] = None, after: Optional[str] = None) -> Page:
        """A page of your executions, newest first; ``labels`` keeps those carrying every one."""
        query: List = [("status", status), ("limit", limit), ("after", after)]
        for k, v in (labels or {}).items():
            query.append(("label", f"{k}={v}"))
        answer = self._call("GET", "/v1/executions", query=query)
        return Page([Execution.of(e) for e in answer.get("executions") or []], answer.get("next"))

    # --- artifacts ---------------------------------------------------------------------------

    def artifacts(self, id: str) -> List[Artifact]:
        """What was kept after the command ended, and what was not (with why)."""
        answer = self._call("GET", f"/v1/executions/{_seg(id)}/artifacts")
        return [Artifact(a.get("name", ""), a.get("status", ""), int(a.get("size") or 0), a.get("sha256"),
                         a.get("detail"), a.get("url")) for a in answer.get("artifacts") or []]

    def download_artifact(self, id: str, name: str, path: Union[str, "os.PathLike[str]"],
                          chunk_size: int = 1 << 16) -> int:
        """Streams artifact ``name`` (its path in the workdir, or ``stdout`` / ``stderr``) into the
        file ``path``, never whole in memory; returns the bytes written."""
        url = f"/v1/executions/{_seg(id)}/artifacts/" + "/".join(_seg(p) for p in name.split("/"))
        response = self._open("GET", url, headers={"Accept": "*/*"}, timeout=self.timeout + 30 * 60,
                              retry=True)
        written = 0
        try:
            with open(path, "wb") as f:
                while True:
                    block = response.read(chunk_size)
                    if not block:
                        break
                    f.write(block)
                    written += len(block)
        except (OSError, socket.timeout) as e:
            if isinstance(e, OSError) and e.filename is not None:
                raise
            raise Unreachable(f"the download of {name} from {self.api} broke: {e}") from e
        finally:
            response.close()
        return written

    def openapi(self) -> Dict[str, Any]:
        """The server's OpenAPI document (``GET /openapi.json``)."""
        return self._call("GET", "/openapi.json")

    # --- plumbing ----------------------------------------------------------------------------

    def _call(self, method: str, path: str, query: Any = None, body: Any = None,
              headers: Optional[Dict[str, str]] = None, wait_ms: Optional[int] = None,
              retry: Optional[bool] = None) -> Dict[str, Any]:
        timeout = self.timeout + (wait_ms or 0) / 1000.0
        response = self._open(method, path, query=query, body=body, headers=headers, timeout=timeout,
                              retry=method == "GET" if retry is None else retry)
        try:
            data = response.read()
        except (OSError, socket.timeout) as e:
            raise Unreachable(f"the answer from {self.api} broke: {e}") from e
        finally:
            response.close()
        try:
            parsed = json.loads(data.decode("utf-8")) if data else {}
        except ValueError:
            raise Unreachable(f"the answer from {self.api}{path} is not JSON: is {self.api} an Outrun API?",
                              status=response.status)
        if isinstance(parsed, dict) and parsed.get("status") == "error" and isinstance(parsed.get("error"), dict):
            raise error_for(response.status, parsed)
        return parsed

    def _open(self, method: str, path: str, query: Any = None, body: Any = None,
              headers: Optional[Dict[str, str]] = None, timeout: float = _SLACK_S, retry: bool = False):
        url = self.api + path
        if query:
            pairs = query.items() if isinstance(query, Mapping) else query
            q = urllib.parse.urlencode([(k, str(v)) for k, v in pairs if v is not None])
            if q:
                url += "?" + q
        data = json.dumps(body).encode("utf-8") if body is not None else (b"" if method == "POST" else None)
        h = {"Accept": "application/json", "User-Agent": "outrun-client-python/0.1.0"}
        if self.token:
            h["Authorization"] = "Bearer " + self.token
        h.update(headers or {})
        attempt = 0
        while True:
            request = urllib.request.Request(url, data=data, method=method, headers=h)
            try:
                return urllib.request.urlopen(request, timeout=timeout)
            except urllib.error.HTTPError as e:
                error = self._http_error(e)
                if not (retry and e.code == 503 and attempt < self.retries):
                    raise error from None
                wait = error.retry_after if error.retry_after is not None else self._backoff(attempt)
            except (urllib.error.URLError, ConnectionError, socket.timeout, TimeoutError) as e:
                if not (retry and attempt < self.retries):
                    reason = getattr(e, "reason", e)
                    raise Unreachable(f"cannot reach the Outrun API at {self.api}: {reason}") from e
                wait = self._backoff(attempt)
            time.sleep(min(wait, self.max_retry_wait))
            attempt += 1

    @staticmethod
    def _backoff(attempt: int) -> float:
        return min(10.0, 0.5 * (2 ** attempt)) * (0.5 + random.random() / 2)

    @staticmethod
    def _http_error(e: "urllib.error.HTTPError") -> OutrunError:
        try:
            raw = e.read(64 * 1024)
            body = json.loads(raw.decode("utf-8")) if raw else None
        except (ValueError, OSError):
            body = None
        finally:
            e.close()
        return error_for(e.code, body if isinstance(body, dict) else None, _retry_after(e.headers.get("Retry-After")))


def _seg(value: str) -> str:
    if not value:
        raise ValueError("an execution id (or name) is required")
    return urllib.parse.quote(str(value), safe="")


def progress(percent: Optional[float] = None, message: Optional[str] = None) -> Progress:
    """From inside a run: reports its progress, ``outrun.progress(40, "2 of 5 shards")``, with the
    run's environment (``OUTRUN_API``, ``OUTRUN_API_TOKEN``, ``OUTRUN_EXECUTION_ID``); see
    :meth:`Outrun.progress`."""
    return Outrun.from_run_env().progress(percent, message)
