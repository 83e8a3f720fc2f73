"""kgrag's own English stopword list (function words that carry no topic).

Written for KET-RAG's keyword graph, where a keyword is any other word: articles, pronouns,
auxiliary and modal verbs, prepositions, conjunctions, common adverbs/determiners, and the
fragments a word tokenizer leaves behind ("s", "t", "ll", "re", "ve"). Numbers are *not*
stopwords: years and quantities are often the answer. All entries are lower case.
"""

from __future__ import annotations

ENGLISH_STOPWORDS: frozenset[str] = frozenset("""
a an the this that these those there here
i me my mine myself we us our ours ourselves you your yours yourself yourselves
he him his himself she her hers herself it its itself they them their theirs themselves
one ones someone something anyone anything everyone everything nobody nothing
who whom whose which what whatever whoever when where why how whether
am is are was were be been being have has had having do does did doing done
will would shall should can could may might must ought
not no nor neither either never none
and or but if then else than so because as while though although unless until since
of at by for with without about against between into through during before after
above below to from up down in out on off over under again further once within
upon onto among amongst across along around behind beyond toward towards via per
also too very just only even still yet already quite rather really almost
all any both each every few more most other others another some such same own
many much several less least lot lots
s t d ll m o re ve y don didn doesn isn wasn weren aren hasn haven hadn won wouldn
shouldn couldn mustn needn mightn shan ain
get gets got getting let lets
""".split())
