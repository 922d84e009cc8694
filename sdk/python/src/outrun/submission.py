"""What a submit sends: :meth:`Outrun.run`'s arguments as the API's JSON body (``SubmitRequest``),
alone or as one item of a batch."""

import base64
from typing import Any, Dict, Mapping, Union

#: Keyword arguments of :meth:`Outrun.run` and the submit fields (``SubmitRequest``) they become.
SUBMIT_FIELDS = {
    "command": "command",
    "wait_ms": "waitMs",
    "wait_for": "waitFor",
    "files": "files",
    "artifacts": "artifacts",
    "workspace": "workspace",
    "env": "env",
    "labels": "labels",
    "timeout_ms": "timeoutMs",
    "identity": "identity",
}


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(p[:1].upper() + p[1:] for p in rest)


def _identity(identity: Any) -> Any:
    """``True`` asks for the server's default audience, a string names one; a dict passes as it is."""
    if identity is None or identity is False:
        return None
    if identity is True:
        return {}
    if isinstance(identity, str):
        return {"audience": identity}
    return identity


def _files(files: Any) -> Any:
    """``{"path": "text" | b"bytes"}`` becomes the API's file list; a list passes as it is."""
    if not isinstance(files, Mapping):
        return files
    out = []
    for path, content in files.items():
        if isinstance(content, (bytes, bytearray, memoryview)):
            out.append({"path": path, "content": base64.b64encode(bytes(content)).decode("ascii"),
                        "encoding": "base64"})
        else:
            out.append({"path": path, "content": content})
    return out


def submission(command: str, **fields: Any) -> Dict[str, Any]:
    """The JSON body of a submit (``SubmitRequest``) for :meth:`Outrun.run`'s arguments: ``files``
    and ``identity`` in their short forms too, other fields in snake_case or camelCase."""
    body: Dict[str, Any] = {"command": command}
    for k, v in fields.items():
        if v is None:
            continue
        if k == "files":
            v = _files(v)
        elif k == "identity":
            v = _identity(v)
            if v is None:
                continue
        elif k in ("artifacts", "secrets") and not isinstance(v, str):
            v = list(v)
        elif k in ("env", "labels") and isinstance(v, Mapping):
            v = dict(v)
        body[SUBMIT_FIELDS.get(k) or _camel(k)] = v
    return body


def batch_item(s: Union[str, Mapping[str, Any]], index: int) -> Dict[str, Any]:
    """One submission of a batch: a command, or run()'s arguments with its own idempotency key."""
    if isinstance(s, str):
        return {"command": s}
    if not isinstance(s, Mapping):
        raise TypeError(f"submissions[{index}]: a command string or a dict of run()'s arguments, got {type(s).__name__}")
    fields = dict(s)
    key = fields.pop("idempotency_key", None)
    camel_key = fields.pop("idempotencyKey", None)
    key = camel_key if key is None else key
    for header in ("traceparent", "tracestate"):
        if header in fields:
            raise TypeError(f"submissions[{index}]: {header} applies to the whole batch: pass it to submit_batch()")
    item = submission(fields.pop("command", None), **fields)
    if item["command"] is None:
        del item["command"]  # the server names the missing field for this item
    if key is not None:
        item["idempotencyKey"] = key
    return item
