"""The data shipped inside the package: the movie graph of ``kgrag demo``, the README's
examples and the tests (``movies.tsv``; README.md in this folder describes it).

:func:`demo_data_path` finds it (or the file ``$KGRAG_DEMO_DATA`` names); it is package data,
so it is there after a plain ``pip install kgrag``, in any folder.
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["DEMO_DATA_ENV", "bundled_data_path", "demo_data_path"]

#: Environment variable that points the demo at another triples file.
DEMO_DATA_ENV = "KGRAG_DEMO_DATA"

_HERE = Path(__file__).resolve().parent


def bundled_data_path() -> Path:
    """The movie graph shipped in the package (``kgrag demo --data-path`` prints it unless
    ``$KGRAG_DEMO_DATA`` names another file)."""
    return _HERE / "movies.tsv"


def demo_data_path(name: str = "movies.tsv") -> Path:
    """Where the bundled demo data file ``name`` is.

    The demo graph ships inside the package (``kgrag/data/``, package data), so ``kgrag demo``
    works from any folder after a plain ``pip install kgrag``; ``examples/data/movies.tsv`` in
    a checkout is a link to the same file. Setting the environment variable
    ``KGRAG_DEMO_DATA`` to a triples file overrides the lookup. Raises
    :class:`FileNotFoundError` naming what was looked for when the file is not there.
    """
    override = os.environ.get(DEMO_DATA_ENV)
    if override:
        path = Path(override).expanduser()
        if not path.is_file():
            raise FileNotFoundError(f"{DEMO_DATA_ENV}={override} is not a file")
        return path
    path = _HERE / name
    if not path.is_file():
        raise FileNotFoundError(
            f"demo data {name!r} is not in the installed package ({path.parent}); set "
            f"{DEMO_DATA_ENV} to a triples file or reinstall kgrag"
        )
    return path
