"""Entity linking against a graph kept in a database.

The linker needs every node name. For a database store they are streamed out once
(:meth:`iter_node_names`, paged on the server) with a progress bar, and the usual local
:class:`kgrag.linking.EntityLinker` (exact, fuzzy, FAISS dense, hybrid) is built from them; the
linker can then be saved with ``linker.save(directory)`` and reloaded without touching the
database again.

Not done yet: querying a Neo4j full-text or vector index in place of the local index (useful
when the name list is too large to hold in memory). :func:`linker_for_store` therefore always
builds the local index and says so in ``linker.index_source`` and in the log.
"""

from __future__ import annotations

import logging
from typing import Any

log = logging.getLogger(__name__)


def linker_for_store(store: Any, *, mode: str = "hybrid", progress: bool = True,
                     batch_size: int = 10_000, **linker_kwargs: Any) -> Any:
    """A local :class:`~kgrag.linking.EntityLinker` over ``store``'s node names.

    ``store`` is any GraphStore (an in-memory graph works too). ``mode`` and ``linker_kwargs``
    (``embedder=``, ``top_m=``, ``aliases=`` ...) go to the linker. The returned linker has an
    ``index_source`` attribute describing where its index came from.
    """
    from tqdm.auto import tqdm

    from kgrag.linking import EntityLinker

    total = store.counts()["nodes"]
    names = tqdm(store.iter_node_names(batch_size=batch_size), total=total, unit="name",
                 desc="streaming node names", disable=not progress)
    try:  # sorted: ties between equal scores then do not depend on the database's storage order
        linker = EntityLinker(sorted(names), mode=mode, **linker_kwargs)
    finally:
        names.close()
    linker.index_source = (f"local {mode} index over {len(linker)} node names streamed from "
                           f"{store!r} (no database full-text/vector index used)")
    log.info("entity linking: %s", linker.index_source)
    return linker
