"""Tool retrievers behind one protocol: what ToolSearcher may search with, chosen by name.

Every retriever is built over a fixed list of candidate APIs and answers
``search(keywords, k) -> [(ToolSchema, score), ...]`` best first, the shape the
sandbox's ToolSearcher expects, so a level-2/3 run can switch retrievers.

* ``embedding``: the paper's recipe: each API's name split into words followed by
  its description, embedded with the default sentence-embedding model
  (all-MiniLM-L6-v2); cosine similarity with the embedded keywords.
* ``bm25``: BM25-Okapi (the ``rank_bm25`` package) over the words of the name,
  the description and the parameter names, with the query normalised.
* ``embedding-norm``: the paper's recipe with the query normalised first.
* ``fields``: embeddings of two fields per API (the paper's text; the name with
  the parameter names and descriptions), the better of the two counting.
* ``hybrid``: reciprocal rank fusion of ``embedding-norm`` and ``bm25``.
* ``enriched``: the paper's text plus our example phrasings of each API
  (``data/retrieval/phrasings.yaml``) as a second embedded field, with a penalty
  when the query asks for another action (create, read, update, delete) than
  the API performs; the ``v2`` protocol's retriever, by the written rule of
  :func:`apibank_lib.report.retrieval.choose_default` (not below the paper's recipe on
  any query set, above it pooled). APIs without phrasings (a training corpus's,
  a release's own) are scored on their name and description, with the penalty.

Query normalisation (:func:`normalize_query`) splits CamelCase words, lower-cases,
and drops dates, times, numbers and filler words ("please", "can you", "my" ...),
which carry no information about which API is meant.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from apibank_lib.core.errors import ConfigError, DataError
from apibank_lib.core.paths import PROJECT_ROOT
from apibank_lib.core.types import ToolSchema

__all__ = [
    "Retriever",
    "RETRIEVERS",
    "PAPER_RECIPE",
    "EnrichedRetriever",
    "PHRASINGS_FILE",
    "load_phrasings",
    "query_action",
    "api_action",
    "ACTIONS",
    "make_retriever",
    "shared_retriever",
    "normalize_query",
    "api_words",
    "EmbeddingRetriever",
    "BM25Retriever",
    "FieldsRetriever",
    "HybridRetriever",
]


class Retriever(Protocol):
    """Ranks a fixed list of candidate APIs for a keyword query."""

    name: str

    def search(self, keywords: str, k: int = 1) -> list[tuple[ToolSchema, float]]:
        """The ``k`` best APIs for ``keywords``, best first, with their scores."""
        ...


# --- query normalisation ------------------------------------------------------------------------------

_FILLER = frozenset(
    """a an the and or but so to of in on at for with from by about into as is are was were be been am do does did
    i me my mine we us our you your u ur he she it they them their this that these those there here
    please pls plz can could would will shall should may might must want wanted need needs like
    hi hello hey thanks thank ok okay just some any also too very really quite now today tomorrow tonight yesterday
    what which who whom when where how why if then than let lets get got give tell show help know make
    am pm jan feb mar apr jun jul aug sep sept oct nov dec january february march april may june july august
    september october november december monday tuesday wednesday thursday friday saturday sunday
    tmrw tmr pls thx ty""".split()
)
_DATE = re.compile(r"\b\d{4}-\d{1,2}-\d{1,2}\b|\b\d{1,2}[/.]\d{1,2}(?:[/.]\d{2,4})?\b|\b\d{1,2}:\d{2}(?::\d{2})?\b")
_NUMBER = re.compile(r"\b\d+(?:[.,]\d+)*(?:st|nd|rd|th|am|pm|k|m|h)?\b")
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")
_WORD = re.compile(r"[a-z]+")


def _camel_split(text: str) -> str:
    # Ours: keeps acronyms whole (``GetURLTitle`` -> ``Get URL Title``) and case as written; the paper's search text
    # uses the original's split instead (:func:`apibank_lib.retrieval.search.split_camel`), on purpose.
    return _CAMEL.sub(" ", text)


def normalize_query(text: str) -> str:
    """Keywords without what cannot name an API: CamelCase split, lower case, no dates, numbers or filler words.

    Falls back to the lower-cased, CamelCase-split text when nothing would be left.
    """
    split = _camel_split(text)
    no_dates = _NUMBER.sub(" ", _DATE.sub(" ", split.lower()))
    words = [w for w in _WORD.findall(no_dates) if w not in _FILLER and len(w) > 1]
    return " ".join(words) if words else " ".join(_WORD.findall(split.lower())) or text.strip()


def api_words(schema: ToolSchema) -> list[str]:
    """The words BM25 indexes for an API: its split name, description and parameter names."""
    text = " ".join(
        [_camel_split(schema.name), schema.description]
        + [_camel_split(p).replace("_", " ") for p in schema.input_parameters]
    )
    return _WORD.findall(text.lower())


# --- actions: what a query asks to do, what an API does ------------------------------------------------

ACTIONS = ("create", "read", "update", "delete")
"""The actions a query or an API is classed into (None when unclear)."""

# Words naming an action in a query, in general English (no API names). Inflections are found by _forms.
_QUERY_ACTION_WORDS = {
    "create": "add create new make set put book schedule arrange plan register open record save store enter enroll "
    "remind invite reserve",
    "update": "modify change edit move reschedule update rename adjust shift replace alter reset postpone",
    "delete": "delete remove cancel drop clear erase",
    "read": "query check look find search show see view list display get retrieve fetch lookup details info tell",
}
_QUERY_ACTION_PHRASES = [
    (re.compile(rf"\b{phrase}\b"), action)
    for phrase, action in (("call off", "delete"), ("get rid", "delete"), ("push back", "update"))
]
# The first word of an API's name, when it is one of these verbs, says what the API does.
_API_ACTION_VERBS = {
    "create": "add create book open register record set schedule make",
    "read": "query get search check list find look",
    "update": "modify change update edit reset",
    "delete": "delete cancel remove",
}
# A question opening with one of these asks to look something up ("Is there an alarm set ...?"), unless it
# names a change or a removal; requests ("Can you add ...?") are classed by their verb.
_LOOKUP_OPENERS = frozenset("what whats which where when who whose how is are was were do does did have has any".split())


def _word_table(groups: dict[str, str]) -> dict[str, str]:
    return {w: action for action, words in groups.items() for w in words.split()}


_QUERY_WORDS = _word_table(_QUERY_ACTION_WORDS)
_API_VERBS = _word_table(_API_ACTION_VERBS)
_INFLECTIONS = (("ing", ""), ("ing", "e"), ("led", ""), ("ed", ""), ("ed", "e"), ("es", ""), ("s", ""))


def _action_of_word(word: str, table: dict[str, str]) -> str | None:
    if word in table:
        return table[word]
    for suffix, repl in _INFLECTIONS:  # moved -> move, cancelled -> cancel, adding -> add
        if word.endswith(suffix) and len(word) - len(suffix) >= 3 and word[: -len(suffix)] + repl in table:
            return table[word[: -len(suffix)] + repl]
    return None


def query_action(text: str) -> str | None:
    """What a query asks to do: ``create``, ``read``, ``update``, ``delete`` or None (unclear).

    A phrase or verb of creating, changing or removing decides ("call off the meeting" is ``delete``), except that
    a question opening like a look-up ("Is there an alarm set for 6?") is ``read`` unless it asks for a change or a
    removal; failing those, a look-up word or a question mark means ``read``.
    """
    low = text.lower().replace("'", "").replace("’", "")
    words = _WORD.findall(low)
    if not words:
        return None
    found = next((a for pattern, a in _QUERY_ACTION_PHRASES if pattern.search(low)), None)
    if found is None:
        found = next((a for w in words if (a := _action_of_word(w, _QUERY_WORDS)) not in (None, "read")), None)
    if words[0] in _LOOKUP_OPENERS and found in (None, "create"):
        return "read"
    if found is not None:
        return found
    if any(_action_of_word(w, _QUERY_WORDS) == "read" for w in words) or text.rstrip().endswith("?"):
        return "read"
    return None


def api_action(schema: ToolSchema) -> str | None:
    """What an API does, from the verb its name starts with, else the first word of its description; or None."""
    first = _camel_split(schema.name).split()[:1]
    if first and (action := _action_of_word(first[0].lower(), _API_VERBS)):
        return action
    opening = _WORD.findall(schema.description.lower())[:1]
    return _action_of_word(opening[0], _QUERY_WORDS) if opening else None


# EnrichedRetriever's settings: the best of retrieval.tune_enriched's grid on the tuning queries (95.74% hit@1;
# ties go to the smaller values). Changing them means tuning again, never looking at held-out queries.
ENRICHED_WEIGHT = 0.6
"""The example phrasings' share of :class:`EnrichedRetriever`'s similarity."""
ENRICHED_PENALTY = 0.03
"""What :class:`EnrichedRetriever` subtracts when the query's action and the API's differ."""

# --- retrievers ----------------------------------------------------------------------------------------


class EmbeddingRetriever:
    """The paper's recipe: cosine similarity of sentence embeddings (the split name followed by the description).

    Args:
        schemas: the candidates, in a fixed order (ties keep it).
        embedder: the sentence-embedding model (default: the packaged all-MiniLM-L6-v2).
        normalize: normalise queries first (:func:`normalize_query`).
    """

    def __init__(self, schemas: Sequence[ToolSchema], embedder: Any = None, *, normalize: bool = False) -> None:
        from apibank_lib.retrieval.search import default_searcher

        self.name = "embedding-norm" if normalize else "embedding"
        self.schemas = list(schemas)
        self.index = default_searcher(self.schemas, embedder)
        self.normalize = normalize

    def scores(self, keywords: str) -> np.ndarray:
        """Cosine similarity with every candidate, in candidate order."""
        return self.index.scores(normalize_query(keywords) if self.normalize else keywords)

    def search(self, keywords: str, k: int = 1) -> list[tuple[ToolSchema, float]]:
        return _top(self.schemas, self.scores(keywords), k)


class BM25Retriever:
    """BM25-Okapi (``rank_bm25``) over each API's name words, description and parameter names; normalised queries."""

    name = "bm25"

    def __init__(self, schemas: Sequence[ToolSchema], embedder: Any = None) -> None:
        from rank_bm25 import BM25Okapi

        self.schemas = list(schemas)
        self.bm25 = BM25Okapi([api_words(s) for s in self.schemas])

    def scores(self, keywords: str) -> np.ndarray:
        """BM25 score of every candidate, in candidate order."""
        return np.asarray(self.bm25.get_scores(_WORD.findall(normalize_query(keywords))), dtype=np.float64)

    def search(self, keywords: str, k: int = 1) -> list[tuple[ToolSchema, float]]:
        return _top(self.schemas, self.scores(keywords), k)


def _parameter_text(schema: ToolSchema) -> str:
    params = "; ".join(f"{p.replace('_', ' ')}: {v.description}" for p, v in schema.input_parameters.items())
    return f"{_camel_split(schema.name).lower()}. {params}" if params else _camel_split(schema.name).lower()


class FieldsRetriever:
    """Two embedded fields per API, the paper's text and the parameters' text; an API scores its better field."""

    name = "fields"

    def __init__(self, schemas: Sequence[ToolSchema], embedder: Any = None) -> None:
        from apibank_lib.retrieval.embedders import default_embedder, embed_texts
        from apibank_lib.retrieval.search import default_searcher

        self.schemas = list(schemas)
        self.index = default_searcher(self.schemas, embedder)
        self.params = embed_texts([_parameter_text(s) for s in self.schemas], embedder or default_embedder())

    def scores(self, keywords: str) -> np.ndarray:
        """The better of the two fields' cosine similarities, per candidate."""
        q = self.index.embed_query(normalize_query(keywords))
        return np.maximum(self.index.matrix @ q, self.params @ q)

    def search(self, keywords: str, k: int = 1) -> list[tuple[ToolSchema, float]]:
        return _top(self.schemas, self.scores(keywords), k)


class HybridRetriever:
    """Reciprocal rank fusion of the normalised embedding search and BM25: ``sum 1 / (k0 + rank)``.

    Args:
        k0: the fusion constant (60 in the original RRF paper; smaller trusts the top ranks more).
        weight: the embedding ranking's weight against BM25's (1.0 = equal).
    """

    name = "hybrid"

    def __init__(self, schemas: Sequence[ToolSchema], embedder: Any = None, *, k0: float = 60.0, weight: float = 1.0) -> None:
        self.schemas = list(schemas)
        self.dense = EmbeddingRetriever(self.schemas, embedder, normalize=True)
        self.sparse = BM25Retriever(self.schemas)
        self.k0, self.weight = k0, weight

    def scores(self, keywords: str) -> np.ndarray:
        """The fused score of every candidate, in candidate order."""
        fused = np.zeros(len(self.schemas))
        for scores, w in ((self.dense.scores(keywords), self.weight), (self.sparse.scores(keywords), 1.0)):
            ranks = np.empty(len(scores))
            ranks[np.argsort(-scores, kind="stable")] = np.arange(1, len(scores) + 1)
            fused += w / (self.k0 + ranks)
        return fused

    def search(self, keywords: str, k: int = 1) -> list[tuple[ToolSchema, float]]:
        return _top(self.schemas, self.scores(keywords), k)


PHRASINGS_FILE = PROJECT_ROOT / "data" / "retrieval" / "phrasings.yaml"
"""Our example phrasings per API (``data/retrieval/phrasings.yaml``)."""


def load_phrasings(path: str | Path | None = PHRASINGS_FILE) -> dict[str, tuple[str, ...]]:
    """API name -> example phrasings, from a phrasings file (empty for None or a missing file).

    Raises:
        DataError: the file is not a mapping ``phrasings: {API: [text, ...]}``.
    """
    if path is None or not Path(path).is_file():
        return {}
    from apibank_lib.core.yamlfile import read_yaml

    data = read_yaml(path)
    entries = data.get("phrasings") if isinstance(data, dict) else None
    if not isinstance(entries, dict):
        raise DataError("a phrasings file needs a 'phrasings' mapping of API names to lists of texts", path)
    out: dict[str, tuple[str, ...]] = {}
    for api, texts in entries.items():
        if not isinstance(texts, list) or not all(isinstance(t, str) and t.strip() for t in texts):
            raise DataError(f"the phrasings of {api} must be a list of non-empty texts", path)
        out[str(api)] = tuple(texts)
    return out


class EnrichedRetriever:
    """The paper's recipe with example phrasings as an extra field, and a penalty for the wrong action.

    An API's score is ``(1 - weight) * cos(query, paper text) + weight * max cos(query, phrasing)``, minus
    ``penalty`` when the query asks for one action (:func:`query_action`) and the API does another
    (:func:`api_action`): "cancel my meeting" should not find AddMeeting however close the topic is. An API with
    no phrasings counts its paper text in their place. The query is embedded once, as it comes.

    Args:
        schemas: the candidates, in a fixed order (ties keep it).
        embedder: the sentence-embedding model (default: the packaged all-MiniLM-L6-v2).
        phrasings: API name -> example phrasings (default: :data:`PHRASINGS_FILE`).
        weight: the phrasings' share of the similarity.
        penalty: subtracted for an action mismatch.
    """

    name = "enriched"

    def __init__(
        self,
        schemas: Sequence[ToolSchema],
        embedder: Any = None,
        *,
        phrasings: dict[str, Sequence[str]] | None = None,
        weight: float = ENRICHED_WEIGHT,
        penalty: float = ENRICHED_PENALTY,
    ) -> None:
        from apibank_lib.retrieval.embedders import default_embedder, embed_texts
        from apibank_lib.retrieval.search import default_searcher

        self.schemas = list(schemas)
        self.index = default_searcher(self.schemas, embedder)
        self.weight, self.penalty = weight, penalty
        examples = load_phrasings() if phrasings is None else phrasings
        texts: list[str] = []
        owner: list[int] = []
        for i, s in enumerate(self.schemas):
            for t in examples.get(s.name, ()):
                texts.append(t)
                owner.append(i)
        self._examples = embed_texts(texts, embedder or default_embedder()) if texts else None
        # slots[i] lists API i's example rows, padded with len(texts): a sentinel similarity of -inf
        counts = np.bincount(np.asarray(owner, dtype=np.intp), minlength=len(self.schemas))
        self._slots = np.full((len(self.schemas), max(1, int(counts.max(initial=0)))), len(texts), dtype=np.intp)
        for row, api in enumerate(owner):
            self._slots[api, np.argmax(self._slots[api] == len(texts))] = row
        self._has_examples = counts > 0
        self._actions = np.asarray([api_action(s) or "" for s in self.schemas])

    def scores(self, keywords: str) -> np.ndarray:
        """The combined score of every candidate, in candidate order."""
        q = self.index.embed_query(keywords)
        text = self.index.matrix @ q
        best = text
        if self._examples is not None:
            similarity = np.append(self._examples @ q, np.float32(-np.inf))
            best = np.where(self._has_examples, similarity[self._slots].max(axis=1), text)
        out = (1.0 - self.weight) * text + self.weight * best
        action = query_action(keywords)
        if action is not None and self.penalty:
            out = out - self.penalty * ((self._actions != "") & (self._actions != action))
        return out

    def search(self, keywords: str, k: int = 1) -> list[tuple[ToolSchema, float]]:
        return _top(self.schemas, self.scores(keywords), k)


def _top(schemas: list[ToolSchema], scores: np.ndarray, k: int) -> list[tuple[ToolSchema, float]]:
    order = np.argsort(-scores, kind="stable")[: max(1, k)]
    return [(schemas[i], float(scores[i])) for i in order]


RETRIEVERS: dict[str, Callable[..., Retriever]] = {
    "embedding": lambda schemas, embedder=None: EmbeddingRetriever(schemas, embedder),
    "embedding-norm": lambda schemas, embedder=None: EmbeddingRetriever(schemas, embedder, normalize=True),
    "bm25": BM25Retriever,
    "fields": FieldsRetriever,
    "hybrid": HybridRetriever,
    "enriched": EnrichedRetriever,
}
"""Retriever name -> constructor ``(schemas, embedder=None)``."""

PAPER_RECIPE = "embedding"
"""The paper's retriever: what every search used before retrievers could be chosen, and the ``paper`` protocol's.
The default of a run is its protocol's (:attr:`~apibank_lib.env.protocols.GradingProtocol.retriever`)."""


def make_retriever(name: str, schemas: Sequence[ToolSchema], embedder: Any = None) -> Retriever:
    """Build the named retriever over ``schemas``."""
    try:
        factory = RETRIEVERS[name]
    except KeyError:
        raise ConfigError(f"unknown retriever {name!r}; choose one of {', '.join(RETRIEVERS)}") from None
    return factory(schemas, embedder)


_SHARED: dict[tuple[str, str], Retriever] = {}


def shared_retriever(name: str, schemas: Sequence[ToolSchema]) -> Retriever:
    """The named retriever over these candidates with the default embedder, built once per process.

    Sandboxes are made per sample; building a retriever (an index, embeddings)
    once per candidate list keeps that cheap.
    """
    from apibank_lib.retrieval.search import schemas_key

    key = (name, schemas_key(schemas))
    found = _SHARED.get(key)
    if found is None:
        found = _SHARED.setdefault(key, make_retriever(name, schemas))
    return found

