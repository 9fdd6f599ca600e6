"""The pipe between the server and a model's worker: length-prefixed frames.

Server → worker: one pickled request per frame (the worker trusts the server). Worker → server: a JSON header
and raw numeric arrays, never a pickle — the worker runs an uploaded model, so everything it sends is decoded as
data only: the header must be JSON within :data:`MAX_HEADER_BYTES`, each array a declared dtype from
:data:`ARRAY_KINDS` (numbers, booleans, fixed-width text) whose byte count matches its shape, within
:data:`MAX_REPLY_BYTES` in all. Anything else is a protocol error.
"""
from __future__ import annotations

import json
import math
import os
import pickle
import select
import struct
import time
from typing import Any, Callable

import numpy as np
from ...errors import ProtocolError

LENGTH = struct.Struct("<Q")
MAX_HEADER_BYTES = 64 * 2**20
MAX_REPLY_BYTES = 1024 * 2**20
MAX_TEXT_CHARS = 4096  # one element of a text array
ARRAY_KINDS = frozenset("biufU")


def readable_soon(fd: int, until: float) -> bool:
    """Whether ``fd`` has data before ``until`` (``time.perf_counter``), polled without sleeping: a process that
    sleeps, even for half a millisecond, then runs its next call at half speed (its core idles and its caches
    cool: ``bench/sandbox_overhead.py`` prints the floor), which a one-row SEV search would pay on each side of
    every call. A reply or request that takes longer is waited for asleep."""
    while True:
        if select.select([fd], [], [], 0)[0]:
            return True
        if time.perf_counter() >= until:
            return False
        os.sched_yield()  # a runnable thread on this core (the model's own pool) goes first


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
    head = json.dumps({"value": header, "arrays": specs}, default=str).encode()
    return frame(head) + b"".join(frame(np.ascontiguousarray(a).tobytes()) for a in arrays)


def _sendable(a: np.ndarray) -> np.ndarray:
    """Object arrays (text labels, mixed values) go as fixed-width text; everything else as it is."""
    if a.dtype.kind == "O":
        return a.astype(str)
    return a


def read_reply(read_exact: Callable[[int], bytes]) -> Any:
    """(Server side.) The next reply, decoded as data only; :class:`ProtocolError` on anything malformed."""
    (size,) = LENGTH.unpack(read_exact(LENGTH.size))
    if size > MAX_HEADER_BYTES:
        raise ProtocolError(f"a reply header of {size:,} bytes")
    try:
        head = json.loads(read_exact(size))
        specs, value = head["arrays"], head["value"]
    except (ValueError, KeyError, TypeError) as exc:
        raise ProtocolError(f"a reply header that is not the expected JSON ({exc})") from None
    if not isinstance(specs, list):
        raise ProtocolError("a reply header without its list of arrays")
    arrays, total = [], 0
    for spec in specs:
        dtype, shape, nbytes = _checked_spec(spec)
        total += nbytes
        (length,) = LENGTH.unpack(read_exact(LENGTH.size))
        if length != nbytes or total > MAX_REPLY_BYTES:
            raise ProtocolError(f"an array of {length:,} bytes where {nbytes:,} were declared (limit "
                                f"{MAX_REPLY_BYTES:,} in all)")
        arrays.append(np.frombuffer(read_exact(length), dtype=dtype).reshape(shape).copy())
    return _restore(value, arrays)


def _checked_spec(spec) -> tuple[np.dtype, tuple[int, ...], int]:
    try:
        dtype, shape = np.dtype(str(spec["dtype"])), tuple(int(n) for n in spec["shape"])
    except (TypeError, ValueError, KeyError):
        raise ProtocolError(f"an array described as {str(spec)[:200]}") from None
    if dtype.kind not in ARRAY_KINDS or dtype.hasobject or (dtype.kind == "U" and dtype.itemsize > 4 * MAX_TEXT_CHARS):
        raise ProtocolError(f"an array of type {dtype}")
    if len(shape) > 8 or any(n < 0 for n in shape):
        raise ProtocolError(f"an array of shape {shape}")
    return dtype, shape, int(math.prod(shape)) * dtype.itemsize


def _restore(value, arrays: list[np.ndarray]):
    if isinstance(value, dict):
        if set(value) == {"__array__"}:
            index = value["__array__"]
            if not isinstance(index, int) or not 0 <= index < len(arrays):
                raise ProtocolError("a reference to an array that was not sent")
            return arrays[index]
        return {k: _restore(v, arrays) for k, v in value.items()}
    if isinstance(value, list):
        return [_restore(v, arrays) for v in value]
    return value
