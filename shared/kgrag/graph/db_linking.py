"""Deprecated: database entity linking moved to :mod:`kgrag.linking.database`.

Importing this module warns (``DeprecationWarning``) and re-exports the public names, so code
written against ``kgrag.graph.db_linking`` keeps working for now.
"""

from __future__ import annotations

import warnings

from kgrag.linking.database import DatabaseEntityLinker, linker_for_store

warnings.warn("kgrag.graph.db_linking moved to kgrag.linking.database; import "
              "DatabaseEntityLinker / linker_for_store from there (or from kgrag.linking)",
              DeprecationWarning, stacklevel=2)

__all__ = ["DatabaseEntityLinker", "linker_for_store"]
