"""Typed errors of the Outrun client.

Every failure is an :class:`OutrunError`. An answer in Outrun's error shape
(``{"status": "error", "error": {"code", "message"}, "guidance"}``) becomes the subclass for
its HTTP status, carrying the server's stable ``code``, its ``message`` and ``guidance``; an
API that cannot be reached (or answers something that is not Outrun's) is :class:`Unreachable`.
"""

from typing import Optional


class OutrunError(Exception):
    """An error from the Outrun API, or the failure to reach it.

    ``status`` is the HTTP status (``None`` when there was no answer), ``code`` the API's stable
    code (``execution_not_found``, ``invalid_request``, ...), ``message`` what went wrong and
    ``guidance`` the server's sentence on what to do next.
    """

    def __init__(self, message: str, code: str = "unknown", status: Optional[int] = None,
                 guidance: Optional[str] = None, retry_after: Optional[float] = None,
                 body: Optional[dict] = None):
        super().__init__(message)
        self.message = message
        self.code = code
        self.status = status
        self.guidance = guidance
        self.retry_after = retry_after
        self.body = body

    def __str__(self) -> str:
        where = f"HTTP {self.status} " if self.status is not None else ""
        return f"{where}{self.code}: {self.message}"


class InvalidRequest(OutrunError):
    """400: the request is wrong (``invalid_request``, ``image_not_allowed``, ...); the message names the field."""


class IdentityRequired(OutrunError):
    """401 ``identity_required``: no token, or an unknown or revoked one."""


class Forbidden(OutrunError):
    """403, e.g. ``admin_required``."""


class NotFound(OutrunError):
    """404: ``execution_not_found`` (also another owner's id), ``artifact_not_stored``, ..."""


class Conflict(OutrunError):
    """409: ``idempotency_key_reused``, ``execution_finished``, ..."""


class RateLimited(OutrunError):
    """429 (``too_many_queued``, ``too_many_waiting``): nothing was stored; ``retry_after`` seconds."""


class Unavailable(OutrunError):
    """503 (``database_unavailable``, ``database_disk_full``, ...): try again after ``retry_after`` seconds."""


class Unreachable(OutrunError):
    """No answer from the API (connection refused, reset, timed out), or one that is not Outrun's."""

    def __init__(self, message: str, status: Optional[int] = None):
        super().__init__(message, code="unreachable", status=status)


_BY_STATUS = {
    400: InvalidRequest,
    401: IdentityRequired,
    403: Forbidden,
    404: NotFound,
    409: Conflict,
    429: RateLimited,
    503: Unavailable,
}


def error_for(status: int, body: Optional[dict], retry_after: Optional[float] = None) -> OutrunError:
    """The typed error for an HTTP error answer ``body`` (already parsed, or None)."""
    info = body.get("error") if isinstance(body, dict) else None
    if not isinstance(info, dict):
        return Unreachable(f"HTTP {status} without Outrun's error shape: is this an Outrun API?", status=status)
    cls = _BY_STATUS.get(status, OutrunError)
    return cls(str(info.get("message", "")), code=str(info.get("code", "unknown")), status=status,
               guidance=body.get("guidance"), retry_after=retry_after, body=body)
