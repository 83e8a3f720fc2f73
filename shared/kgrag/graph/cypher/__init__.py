"""The Cypher database backends: one store written once in parameterised read-only Cypher
(:mod:`~kgrag.graph.cypher.store`) with a driver per database (:mod:`~kgrag.graph.cypher.neo4j`,
:mod:`~kgrag.graph.cypher.falkordb`), the checks every LLM-written query passes before it runs
(:mod:`~kgrag.graph.cypher.safety`, :mod:`~kgrag.graph.cypher.budget`,
:mod:`~kgrag.graph.cypher.params`, :mod:`~kgrag.graph.cypher.result_budget`), bulk loading
(:mod:`~kgrag.graph.cypher.load`) and database vector indexes (:mod:`~kgrag.graph.cypher.vectors`).

The database clients are imported lazily, so importing this package needs neither of them.
"""
