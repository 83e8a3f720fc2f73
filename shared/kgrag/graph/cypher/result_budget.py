"""A byte budget on what one untrusted query's result may bring over the network.

``run_cypher``'s row cap bounds rows, not bytes: one row holding two million strings (a 2.5 kB
query) was received and parsed whole, and when the caller's deadline had passed the abandoned
reader thread went on parsing it (client RSS +200-250 MB per query). The stores therefore read
an untrusted query's reply through a :class:`BudgetedSocket`, which counts the bytes received
and stops the read as soon as they exceed the budget (:class:`~kgrag.errors.ResultTooLargeError`;
the connection is dropped, never reused half-read), and which the caller's deadline can cancel
(:meth:`BudgetedSocket.cancel` shuts the socket down, so a reader blocked on the server or part
way through a reply ends at once instead of running on).

The Redis-protocol store reads the reply itself with :func:`read_resp2` (a small RESP2 reader,
the protocol FalkorDB's client speaks); the Bolt store puts the counting socket under the
driver's reader.
"""

from __future__ import annotations

import socket
from typing import Any

from kgrag.errors import GraphDatabaseError, ResultTooLargeError

#: Default byte budget of one ``run_cypher`` result, as received from the server (4 MiB).
MAX_RESULT_BYTES = 4 * 1024 * 1024
#: Deepest nesting of lists a RESP2 reply may have (FalkorDB replies nest a few levels).
_MAX_DEPTH = 200


class _Stop(OSError):
    """Raised inside a database driver's read: an ``OSError``, so the driver drops the
    connection as broken instead of reusing it half-read."""


class BudgetedSocket:
    """A socket (or socket-like object) whose reads count against a byte budget.

    ``limit`` bytes may be received (``None``: no limit); a read that goes over it, or any read
    after :meth:`cancel`, raises ``OSError``. ``exceeded`` / ``cancelled`` tell afterwards why
    the read stopped, whatever the driver made of the ``OSError``.
    """

    def __init__(self, sock: Any, limit: int | None) -> None:
        self._sock = sock
        self.limit = limit
        self.received = 0
        self.exceeded = False
        self.cancelled = False

    def _count(self, n: int) -> None:
        self.received += n
        if self.limit is not None and self.received > self.limit:
            self.exceeded = True
            raise _Stop(f"the result exceeded {self.limit} bytes")

    def _check(self) -> None:
        if self.cancelled:
            raise _Stop("the read was cancelled (the caller's deadline passed)")
        if self.exceeded:
            raise _Stop(f"the result exceeded {self.limit} bytes")

    def recv_into(self, buffer: Any, nbytes: int = 0, *flags: Any) -> int:
        self._check()
        n = self._sock.recv_into(buffer, nbytes, *flags)
        self._count(n)
        return n

    def recv(self, bufsize: int, *flags: Any) -> bytes:
        self._check()
        data = self._sock.recv(bufsize, *flags)
        self._count(len(data))
        return data

    def cancel(self) -> None:
        """Stop the read from another thread: later reads fail, a blocked one returns now."""
        self.cancelled = True
        real = self._sock
        while not isinstance(real, socket.socket) and hasattr(real, "_socket"):
            real = real._socket  # a driver's wrapper (neo4j's BoltSocket) around the socket
        try:
            real.shutdown(socket.SHUT_RDWR)
        except (OSError, AttributeError):
            pass  # already closed

    def too_large(self, what: str) -> ResultTooLargeError:
        return ResultTooLargeError(
            f"{what}: the result exceeded the budget of {self.limit:,} bytes (reading stopped); "
            "return fewer or smaller values: aggregate, filter, or add LIMIT")

    def __getattr__(self, name: str) -> Any:
        return getattr(self._sock, name)


class _Buffered:
    """Line and exact-length reads over a :class:`BudgetedSocket`, 64 KiB at a time."""

    def __init__(self, sock: BudgetedSocket) -> None:
        self._sock = sock
        self._data = bytearray()
        self._pos = 0

    def _fill(self) -> None:
        chunk = self._sock.recv(65536)
        if not chunk:
            raise ConnectionError("the server closed the connection")
        if self._pos:
            del self._data[:self._pos]
            self._pos = 0
        self._data += chunk

    def readline(self) -> bytes:
        while True:
            end = self._data.find(b"\r\n", self._pos)
            if end >= 0:
                line = bytes(self._data[self._pos:end])
                self._pos = end + 2
                return line
            self._fill()

    def read(self, n: int) -> bytes:
        while len(self._data) - self._pos < n + 2:
            self._fill()
        data = bytes(self._data[self._pos:self._pos + n])
        self._pos += n + 2  # the value and its \r\n
        return data


def read_resp2(sock: BudgetedSocket, error_type: type[Exception]) -> Any:
    """One RESP2 reply read from ``sock``, decoded as the ``falkordb`` client decodes replies
    (``decode_responses=True``): text as ``str``, integers as ``int``, arrays as lists.

    An error reply at the top is raised as ``error_type(message)``; one inside an array is
    returned there as an ``error_type`` instance (how the client reports a query's run-time
    error after its rows).
    """
    reply = _read(_Buffered(sock), error_type, 0)
    if isinstance(reply, error_type):
        raise reply
    return reply


def _read(buf: _Buffered, error_type: type[Exception], depth: int) -> Any:
    line = buf.readline()
    kind, rest = line[:1], line[1:]
    if kind == b"+":
        return rest.decode("utf-8")
    if kind == b"-":
        return error_type(rest.decode("utf-8", errors="replace"))
    if kind == b":":
        return int(rest)
    if kind == b"$":
        size = int(rest)
        return None if size < 0 else buf.read(size).decode("utf-8")
    if kind == b"*":
        count = int(rest)
        if count < 0:
            return None
        if depth >= _MAX_DEPTH:
            raise GraphDatabaseError(f"the reply nests lists deeper than {_MAX_DEPTH} levels")
        return [_read(buf, error_type, depth + 1) for _ in range(count)]
    raise GraphDatabaseError(f"unexpected reply from the server: {line[:60]!r}")
