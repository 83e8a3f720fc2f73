"""UltRAG: an LLM writes a logical query; an executor scores every entity as a fuzzy set.

Paper: Georgiev et al., "UltRAG: a Universal Simple Scalable Recipe for Knowledge Graph RAG".
Modules: :mod:`~kgrag.methods.ultrag.query` (DSL / tuple parser, AST),
:mod:`~kgrag.methods.ultrag.executor` (the fuzzy-query evaluator, symbolic projection on sparse
matrices), :mod:`~kgrag.methods.ultrag.ultraquery` / :mod:`~kgrag.methods.ultrag.neural`
(UltraQuery, the neural executor, with its packaged checkpoint),
:mod:`~kgrag.methods.ultrag.linking` (Eq. 2 softmax linking), :mod:`~kgrag.methods.ultrag.seppr`
(Algorithm 2), :mod:`~kgrag.methods.ultrag.arbitrator`, :mod:`~kgrag.methods.ultrag.prompts`,
:mod:`~kgrag.methods.ultrag.pipeline` (Algorithm 1; its LLM calls are yielded requests, driven
sync or async by :mod:`kgrag.llm.steps`).
"""

from kgrag.methods.ultrag.arbitrator import (
    Arbitrator,
    LLMArbitrator,
    MarginArbitrator,
    parse_answers,
)
from kgrag.methods.ultrag.config import UltRAGConfig
from kgrag.methods.ultrag.executor import (
    ArraySets,
    FuzzyQueryExecutor,
    FuzzySet,
    Projector,
    QueryExecutor,
    RelationMatrices,
    SetAlgebra,
    SparseRelationProjector,
    SymbolicFuzzyExecutor,
    fuzzy_set,
    one_hot,
    top_k,
)
from kgrag.methods.ultrag.linking import SoftmaxLeafLinker, eq2_probabilities
from kgrag.methods.ultrag.neural import NeuralFuzzyExecutor, UltraQueryProjector
from kgrag.methods.ultrag.pipeline import Execution, UltRAG, execute, extract_query_text
from kgrag.methods.ultrag.query import (
    Entity,
    Intersection,
    Negation,
    Projection,
    Query,
    QueryError,
    QueryResolutionError,
    QueryStructureError,
    QuerySyntaxError,
    Relation,
    Union_,
    leaves,
    parse_query,
    postfix,
    to_dsl,
    to_tuple_text,
)
from kgrag.methods.ultrag.seppr import induced_subgraph, seppr_nodes, seppr_scores
from kgrag.methods.ultrag.store_executor import StoreQueryExecutor, StoreSets
from kgrag.methods.ultrag.vocabulary import GraphVocabulary

__all__ = [
    "UltRAGConfig",
    "Arbitrator",
    "ArraySets",
    "Entity",
    "Execution",
    "FuzzyQueryExecutor",
    "FuzzySet",
    "GraphVocabulary",
    "Intersection",
    "LLMArbitrator",
    "MarginArbitrator",
    "Negation",
    "NeuralFuzzyExecutor",
    "Projection",
    "Projector",
    "Query",
    "QueryError",
    "QueryExecutor",
    "QueryResolutionError",
    "QueryStructureError",
    "QuerySyntaxError",
    "Relation",
    "RelationMatrices",
    "SetAlgebra",
    "SoftmaxLeafLinker",
    "SparseRelationProjector",
    "StoreQueryExecutor",
    "StoreSets",
    "SymbolicFuzzyExecutor",
    "UltRAG",
    "UltraQueryProjector",
    "Union_",
    "eq2_probabilities",
    "execute",
    "extract_query_text",
    "fuzzy_set",
    "induced_subgraph",
    "leaves",
    "one_hot",
    "parse_answers",
    "parse_query",
    "postfix",
    "seppr_nodes",
    "seppr_scores",
    "to_dsl",
    "to_tuple_text",
    "top_k",
]
