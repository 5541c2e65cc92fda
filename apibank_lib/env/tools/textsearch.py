"""Offline text search: a Treebank-style word tokenizer and BM25-Okapi ranking.

The original SearchEngine tokenised with NLTK's ``word_tokenize`` and ranked with
the ``rank_bm25`` package. NLTK is not a dependency here: :func:`word_tokenize`
follows the same conventions (lower-case; words, numbers and punctuation as
separate tokens; ``n't``, ``'s``, ``'ll`` ... split off; inner hyphens, decimal
points and thousands separators kept). Ranking uses ``rank_bm25`` itself
(:class:`BM25Okapi` wraps it), as the retrievers of :mod:`apibank_lib.retrieval.retrievers` do.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import numpy as np

__all__ = ["word_tokenize", "BM25Okapi"]

# Characters that are always a token of their own (a run of backticks or dots counts as one).
_ALWAYS_SPLIT = re.compile(r"(`+|\.{2,}|--|[?!;@#$%&*()\[\]{}<>“”‘’«»„])")
# A comma or colon is punctuation unless a digit follows (1,000 and 12:30 stay whole).
_COMMA_COLON = re.compile(r"([,:])(?!\d)")
# A double quote opens at the start of a chunk or after an opening bracket; any other closes.
_OPEN_QUOTE = re.compile(r'(?:^|(?<=[(\[{<]))"')
# A single quote opening a word is split off, unless it starts a clitic such as 's or 're.
_OPEN_SINGLE = re.compile(r"(?<!\w)'(?!(?:re|ve|ll|m|t|s|d|n)\b)(?=\w)")
_CLOSERS = {")", "]", "}", ">", "'", "''"}
# Clitics split from the end of a word, longest first.
_SUFFIXES = ("n't", "'ll", "'re", "'ve", "'s", "'m", "'d")
# Words written as one that Treebank splits in two.
_FUSED = {
    "cannot": ("can", "not"),
    "gonna": ("gon", "na"),
    "gotta": ("got", "ta"),
    "wanna": ("wan", "na"),
    "gimme": ("gim", "me"),
    "lemme": ("lem", "me"),
}
# A period followed by space ends a sentence unless the word looks like an abbreviation
# (a single letter, or dots inside: "e.g.", "u.s.").
_SENTENCE_END = re.compile(r"(?<=[^\s.])\.(?=\s)")
_ABBREVIATION = re.compile(r"(?:^|\s)(?:\w|\w+(?:\.\w+)+)$")


def _sentences(text: str) -> list[str]:
    """Split at sentence-final periods (a light stand-in for Punkt)."""
    out: list[str] = []
    start = 0
    for m in _SENTENCE_END.finditer(text):
        if _ABBREVIATION.search(text, start, m.start()):
            continue
        out.append(text[start : m.end()])
        start = m.end()
    out.append(text[start:])
    return [s for s in out if s.strip()]


def _split_word(word: str) -> list[str]:
    """Split clitics and fused forms off one word that has no other punctuation left."""
    if word in _FUSED:
        return list(_FUSED[word])
    for suffix in _SUFFIXES:
        if word.endswith(suffix) and len(word) > len(suffix) and word[-len(suffix) - 1] != "'":
            return [word[: -len(suffix)], suffix]
    if len(word) > 1 and word.endswith("'") and word[-2] != "'":
        return [word[:-1], "'"]  # plural possessive: students' -> students '
    return [word]


def _tokenize_sentence(sentence: str) -> list[str]:
    pieces: list[str] = []
    for chunk in sentence.split():
        chunk = _OPEN_QUOTE.sub(" `` ", chunk).replace('"', " '' ")
        chunk = _OPEN_SINGLE.sub("' ", chunk)
        chunk = _ALWAYS_SPLIT.sub(r" \1 ", _COMMA_COLON.sub(r" \1 ", chunk))
        pieces.extend(chunk.split())
    # The sentence-final period (possibly before closing brackets or quotes) is its own token.
    for i in range(len(pieces) - 1, -1, -1):
        p = pieces[i]
        if p in _CLOSERS:
            continue
        if len(p) > 1 and p.endswith(".") and not p.endswith(".."):
            pieces[i : i + 1] = [p[:-1], "."]
        break
    tokens: list[str] = []
    for p in pieces:
        tokens.extend(_split_word(p))
    return tokens


def word_tokenize(text: str) -> list[str]:
    """Tokenise ``text`` the Treebank way, lower-cased.

    Examples:
        >>> word_tokenize("Don't stop: it's 12:30, not 1,000 km away.")
        ['do', "n't", 'stop', ':', 'it', "'s", '12:30', ',', 'not', '1,000', 'km', 'away', '.']
    """
    return [t for s in _sentences(text.lower()) for t in _tokenize_sentence(s)]


class BM25Okapi:
    """BM25-Okapi ranking by the ``rank_bm25`` package (``k1=1.5, b=0.75, epsilon=0.25``, its ATIRE idf floor).

    A thin wrapper: the scores are ``rank_bm25.BM25Okapi``'s own; it adds
    :meth:`top_n` ranked as the original SearchEngine ranked (numpy's default
    argsort), and accepts an empty corpus (which the package divides by).

    Args:
        corpus: one token list per document.
        k1: term-frequency saturation.
        b: length normalisation.
        epsilon: the floor factor for negative idfs.
    """

    def __init__(
        self, corpus: Sequence[Sequence[str]], k1: float = 1.5, b: float = 0.75, epsilon: float = 0.25
    ) -> None:
        from rank_bm25 import BM25Okapi as _Package

        self.corpus_size = len(corpus)
        self._bm25 = _Package([list(doc) for doc in corpus], k1=k1, b=b, epsilon=epsilon) if corpus else None

    @property
    def avgdl(self) -> float:
        """Mean document length."""
        return float(self._bm25.avgdl) if self._bm25 is not None else 0.0

    @property
    def idf(self) -> dict[str, float]:
        """Inverse document frequency per term, after the floor."""
        return dict(self._bm25.idf) if self._bm25 is not None else {}

    def get_scores(self, query: Sequence[str]) -> np.ndarray:
        """BM25 score of every document for ``query`` (repeated query tokens count again)."""
        if self._bm25 is None:
            return np.zeros(0)
        return np.asarray(self._bm25.get_scores(list(query)))

    def top_n(self, query: Sequence[str], n: int) -> list[int]:
        """Indices of the ``n`` best documents, ranked with numpy's default (unstable) argsort."""
        return [int(i) for i in np.argsort(-self.get_scores(query))[:n]]
