"""Shared pytest fixtures."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="session")
def minilm():
    """The packaged all-MiniLM-L6-v2 embedder, loaded once per test session."""
    from kgrag.embed import default_embedder

    embedder = default_embedder()
    embedder.embed_query("warm up")  # load now, so the first test is not billed for it
    return embedder
