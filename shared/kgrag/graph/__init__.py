"""Knowledge graphs: the GraphStore protocol and its backends (in memory by default)."""

from kgrag.graph.base import Direction, GraphStore, PathStep, parse_relation_path
from kgrag.graph.memory import KnowledgeGraph, normalize_name

__all__ = ["Direction", "GraphStore", "KnowledgeGraph", "PathStep", "normalize_name",
           "parse_relation_path"]
