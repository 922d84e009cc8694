"""Outrun client: run shell commands durably through Outrun's HTTP API.

    from outrun import Outrun
    o = Outrun()                                   # OUTRUN_API, OUTRUN_TOKEN
    ex = o.run("echo hello", wait_ms=10_000)
    print(ex.status, ex.exit_code, ex.stdout.text)
"""

from .client import (
    TERMINAL,
    Artifact,
    ErrorInfo,
    Execution,
    OutputChunk,
    Outrun,
    Page,
    StreamDelta,
    StreamText,
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
    "Outrun", "Execution", "OutputChunk", "StreamText", "StreamDelta", "ErrorInfo", "Artifact", "Page",
    "TERMINAL", "OutrunError", "InvalidRequest", "IdentityRequired", "Forbidden", "NotFound", "Conflict",
    "RateLimited", "Unavailable", "Unreachable",
]
