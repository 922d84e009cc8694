"""Outrun client: run shell commands durably through Outrun's HTTP API.

    from outrun import Outrun
    o = Outrun()                                   # OUTRUN_API, OUTRUN_TOKEN
    ex = o.run("echo hello", wait_ms=10_000)
    print(ex.status, ex.exit_code, ex.stdout.text)

Inside a run, ``Outrun.from_run_env()`` acts as the run's owner (children, progress), and
``outrun.progress(40, "2 of 5 shards")`` reports how far it got.
"""

from .client import (
    TERMINAL,
    Artifact,
    BatchItem,
    BatchResult,
    ErrorInfo,
    Execution,
    OutputChunk,
    Outrun,
    Page,
    Progress,
    StreamDelta,
    StreamText,
    progress,
)
from .errors import (
    Conflict,
    Forbidden,
    IdentityRequired,
    InvalidRequest,
    NotFound,
    OutrunError,
    RateLimited,
    Unavailable,
    Unreachable,
)

__version__ = "0.1.0"

__all__ = [
    "Outrun", "Execution", "BatchResult", "BatchItem", "OutputChunk", "StreamText", "StreamDelta", "ErrorInfo", "Artifact", "Page",
    "Progress", "progress", "TERMINAL", "OutrunError", "InvalidRequest", "IdentityRequired", "Forbidden", "NotFound", "Conflict",
    "RateLimited", "Unavailable", "Unreachable",
]
