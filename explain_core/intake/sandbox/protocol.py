"""The pipe between the server and a model's worker: length-prefixed frames.

Server → worker: one pickled request per frame (the worker trusts the server). Worker → server: a JSON header and
raw numeric arrays, never a pickle — the worker runs an uploaded model (whose code may run, and may write to the
pipe itself), so everything it sends is decoded as data only and bounded by what its request can need
(:class:`Expect`) before it is decoded: the header's bytes (64 KiB for a call, :data:`MAX_HEADER_BYTES` otherwise),
its items (:data:`MAX_HEADER_ITEMS`, counted before JSON decodes them) and its nesting (:data:`MAX_DEPTH`); each
array a declared dtype from :data:`ARRAY_KINDS` (numbers, booleans, fixed-width text) whose byte count matches its
shape; for a call, one array of the request's rows and at most its outputs' columns (or a flat one of no more
values), of a dtype the method can return; every array's bytes within the request's budget, all checked before a
byte of an array is read. Anything else is a protocol error: the server stops the worker and says so.
"""
from __future__ import annotations

import json
import math
import pickle
import struct
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np
from ...errors import ProtocolError

LENGTH = struct.Struct("<Q")
MAX_HEADER_BYTES = 4 * 2**20  # a model's description (2,000 input names…), an introspection's plain data
CALL_HEADER_BYTES = 64 * 2**10  # a call's reply: one array's description, or an error message
MAX_HEADER_ITEMS = 100_000  # JSON values in a header ("," ":" "[" "{" counted): ~200 bytes each once decoded
MAX_DEPTH = 32
MAX_REPLY_BYTES = 1024 * 2**20
MAX_TEXT_CHARS = 4096  # one element of a text array
ARRAY_KINDS = frozenset("biufU")


@dataclass(frozen=True)
class Expect:
    """What the reply to one request may hold: ``header_bytes``; ``array_bytes`` in all; for a call, ``rows`` (the
    array's first dimension), ``columns`` (at most, of a 2-D array), its ``kinds`` and ``text_chars`` (at most, per
    element of a text array)."""

    header_bytes: int = MAX_HEADER_BYTES
    array_bytes: int = MAX_REPLY_BYTES
    rows: int | None = None
    columns: int = 1
    kinds: str = "biufU"
    text_chars: int = MAX_TEXT_CHARS


def call_expect(rows: int, columns: int, kinds: str, text_chars: int = 0) -> Expect:
    """The bound on a call's reply: one array of ``rows`` × at most ``columns`` of ``kinds`` (8 bytes a number,
    4 per character of text)."""
    element = max(8, 4 * text_chars)
    return Expect(CALL_HEADER_BYTES, rows * columns * element, rows, columns, kinds, text_chars)


def frame(payload: bytes) -> bytes:
    return LENGTH.pack(len(payload)) + payload


def request_bytes(request: dict) -> bytes:
    return frame(pickle.dumps(request, protocol=5))


def read_request(read_exact: Callable[[int], bytes]) -> dict:
    """(Worker side.) The next request."""
    (size,) = LENGTH.unpack(read_exact(LENGTH.size))
    return pickle.loads(read_exact(size))  # noqa: S301 — written by the server that started this worker


def reply_bytes(value: Any) -> bytes:
    """(Worker side.) ``value`` — JSON types, numpy scalars and arrays, nested — as one reply."""
    arrays: list[np.ndarray] = []

    def plain(v):
        if isinstance(v, np.ndarray):
            arrays.append(_sendable(v))
            return {"__array__": len(arrays) - 1}
        if isinstance(v, dict):
            return {str(k): plain(x) for k, x in v.items()}
        if isinstance(v, (list, tuple)):
            return [plain(x) for x in v]
        if isinstance(v, np.generic):
            return v.item()
        return v

    header = plain(value)
    specs = [{"dtype": a.dtype.str, "shape": list(a.shape)} for a in arrays]
    head = json.dumps({"value": header, "arrays": specs}, default=str, ensure_ascii=False).encode()
    return frame(head) + b"".join(frame(np.ascontiguousarray(a).tobytes()) for a in arrays)


def _sendable(a: np.ndarray) -> np.ndarray:
    """Object arrays (text labels, mixed values) go as fixed-width text; everything else as it is."""
    if a.dtype.kind == "O":
        return a.astype(str)
    return a


def read_reply(read_exact: Callable[[int], bytes], expect: Expect = Expect()) -> Any:
    """(Server side.) The next reply, decoded as data only within ``expect``; :class:`ProtocolError` on anything
    malformed or larger than the request can need."""
    (size,) = LENGTH.unpack(read_exact(LENGTH.size))
    if size > expect.header_bytes:
        raise ProtocolError(f"a reply header of {size:,} bytes where at most {expect.header_bytes:,} were expected")
    raw = read_exact(size)
    items = sum(raw.count(c) for c in (b",", b":", b"[", b"{"))
    if items > MAX_HEADER_ITEMS:
        raise ProtocolError(f"a reply header of {items:,} items (at most {MAX_HEADER_ITEMS:,})")
    try:
        head = json.loads(raw)
        specs, value = head["arrays"], head["value"]
    except RecursionError:
        raise ProtocolError(f"a reply header nested deeper than {MAX_DEPTH}") from None
    except (ValueError, KeyError, TypeError) as exc:
        raise ProtocolError(f"a reply header that is not the expected JSON ({str(exc)[:200]})") from None
    if not isinstance(specs, list) or len(specs) > MAX_DEPTH:
        raise ProtocolError("a reply header without its list of arrays")
    checked = [_checked_spec(spec, expect) for spec in specs]
    total = sum(nbytes for _, _, nbytes in checked)
    if total > expect.array_bytes or (expect.rows is not None and len(checked) > 1):
        raise ProtocolError(f"arrays of {total:,} bytes where this request needs at most {expect.array_bytes:,}")
    arrays = []
    for dtype, shape, nbytes in checked:
        (length,) = LENGTH.unpack(read_exact(LENGTH.size))
        if length != nbytes:
            raise ProtocolError(f"an array of {length:,} bytes where {nbytes:,} were declared")
        arrays.append(np.frombuffer(read_exact(length), dtype=dtype).reshape(shape).copy())
    return _restore(value, arrays, 0)


def _checked_spec(spec, expect: Expect) -> tuple[np.dtype, tuple[int, ...], int]:
    try:
        dtype, shape = np.dtype(str(spec["dtype"])), tuple(int(n) for n in spec["shape"])
    except (TypeError, ValueError, KeyError, OverflowError):
        raise ProtocolError(f"an array described as {str(spec)[:200]}") from None
    if dtype.kind not in ARRAY_KINDS or dtype.kind not in expect.kinds or dtype.hasobject or \
            (dtype.kind == "U" and dtype.itemsize > 4 * expect.text_chars):
        raise ProtocolError(f"an array of type {dtype}")
    if len(shape) > 8 or any(n < 0 for n in shape):
        raise ProtocolError(f"an array of shape {shape}")
    if expect.rows is not None and not (len(shape) == 1 and shape[0] <= expect.rows * expect.columns or
                                        len(shape) == 2 and shape[0] == expect.rows and shape[1] <= expect.columns):
        raise ProtocolError(f"an array of shape {shape} for {expect.rows:,} rows of at most {expect.columns:,} "
                            "outputs")
    return dtype, shape, int(math.prod(shape)) * dtype.itemsize


def _restore(value, arrays: list[np.ndarray], depth: int):
    if depth > MAX_DEPTH:
        raise ProtocolError(f"a reply header nested deeper than {MAX_DEPTH}")
    if isinstance(value, dict):
        if set(value) == {"__array__"}:
            index = value["__array__"]
            if not isinstance(index, int) or not 0 <= index < len(arrays):
                raise ProtocolError("a reference to an array that was not sent")
            return arrays[index]
        return {k: _restore(v, arrays, depth + 1) for k, v in value.items()}
    if isinstance(value, list):
        return [_restore(v, arrays, depth + 1) for v in value]
    return value
