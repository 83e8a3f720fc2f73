"""The datasets beside the checkout (``../shared/data``), or a skip that says so.

A clone without ``../shared`` still runs every test that does not need the real datasets; the
ones that do are skipped with a one-line reason. Under CI (``CI=true``, as ``.ci/run`` sets) a
missing dataset fails instead, so CI can never pass by skipping them.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

SHARED_DATA = Path(__file__).resolve().parents[2] / "shared" / "data"


def shared_data(*parts: str) -> Path:
    """``../shared/data/<parts>``; skips the calling test (fails under CI) when it is absent."""
    path = SHARED_DATA.joinpath(*parts)
    if path.exists():
        return path
    reason = f"needs {path} (the datasets kept beside the checkout in ../shared/data; see README)"
    if os.environ.get("CI", "").strip().lower() in {"1", "true", "yes"}:
        pytest.fail(f"{reason}; CI must have it", pytrace=False)
    pytest.skip(reason)
