"""The answer to a batch of submits (``POST /v1/executions/batch``): one result per submission."""

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Dict, List, Mapping, Optional

from .errors import OutrunError, error_for

if TYPE_CHECKING:
    from .client import Execution


@dataclass
class BatchItem:
    """What became of one submission of a batch: ``index`` (its place in the list), ``status``
    (the HTTP status a single submit would have answered: 202 accepted, 200 for a repeat of an
    idempotency key whose execution has ended, else 400, 403, 409, 429, ...) and
    either its ``execution`` or its ``error`` (the :class:`OutrunError` a single submit would have
    raised for it: ``InvalidRequest``, ``Conflict`` ``idempotency_key_reused``, ...). ``replayed``:
    its idempotency key had been accepted before, and this is that first execution."""
    index: int
    status: int
    execution: Optional["Execution"] = None
    error: Optional[OutrunError] = None
    replayed: bool = False
    raw: Dict[str, Any] = field(default_factory=dict, repr=False)

    @property
    def ok(self) -> bool:
        """True when it was accepted (stored, or replayed): ``execution`` is set."""
        return self.execution is not None

    @classmethod
    def of(cls, d: Mapping[str, Any], execution_of: Callable[[Mapping[str, Any]], "Execution"]) -> "BatchItem":
        status = int(d.get("status") or 0)
        ex = d.get("execution")
        err = d.get("error")
        return cls(index=int(d.get("index") or 0), status=status,
                   execution=execution_of(ex) if isinstance(ex, Mapping) else None,
                   error=error_for(status, dict(err)) if isinstance(err, Mapping) else None,
                   replayed=bool(d.get("replayed", False)), raw=dict(d))


@dataclass
class BatchResult:
    """The answer to a batch: how many were ``accepted`` and ``refused``, ``results``, one
    :class:`BatchItem` per submission in the order sent, and the server's ``guidance``."""
    accepted: int
    refused: int
    results: List[BatchItem]
    guidance: Optional[str] = None
    raw: Dict[str, Any] = field(default_factory=dict, repr=False)

    @property
    def executions(self) -> List["Execution"]:
        """The accepted submissions' executions, in order."""
        return [r.execution for r in self.results if r.execution is not None]

    @property
    def errors(self) -> List[BatchItem]:
        """The refused submissions (each with ``index`` and ``error``)."""
        return [r for r in self.results if r.execution is None]

    @classmethod
    def of(cls, d: Mapping[str, Any], execution_of: Callable[[Mapping[str, Any]], "Execution"]) -> "BatchResult":
        results = sorted((BatchItem.of(r, execution_of) for r in d.get("results") or [] if isinstance(r, Mapping)),
                         key=lambda r: r.index)
        return cls(accepted=int(d.get("accepted") or 0), refused=int(d.get("refused") or 0), results=results,
                   guidance=d.get("guidance"), raw=dict(d))
