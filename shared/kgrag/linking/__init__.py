"""Entity and relation linking: exact, alias, fuzzy (rapidfuzz), dense (FAISS), hybrid; and
mention extraction from questions without an LLM.

>>> linker = EntityLinker(["Jamaica", "Japan", "Kingston"], mode="fuzzy")
>>> linker.link("Jamaican people")[0].name
'Jamaica'
"""

from kgrag.linking.database import DatabaseEntityLinker, linker_for_store
from kgrag.linking.fuzzy import FuzzyIndex, TrigramIndex, coverage_wratio, name_key
from kgrag.linking.linker import MODES, EntityLinker, Link, RelationLinker
from kgrag.linking.mentions import STOPWORDS, Mention, extract_mentions

__all__ = [
    "MODES",
    "STOPWORDS",
    "DatabaseEntityLinker",
    "EntityLinker",
    "FuzzyIndex",
    "Link",
    "Mention",
    "RelationLinker",
    "TrigramIndex",
    "coverage_wratio",
    "extract_mentions",
    "linker_for_store",
    "name_key",
]
