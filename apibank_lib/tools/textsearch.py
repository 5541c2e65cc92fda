"""Offline text search: a Treebank-style word tokenizer and BM25-Okapi ranking.

The original SearchEngine tokenised with NLTK's ``word_tokenize`` and ranked with
the ``rank_bm25`` package. Neither is a dependency here: :func:`word_tokenize`
follows the same conventions (lower-case; words, numbers and punctuation as
separate tokens; ``n't``, ``'s``, ``'ll`` ... split off; inner hyphens, decimal
points and thousands separators kept), and :class:`BM25Okapi` computes the
same scores as ``rank_bm25.BM25Okapi``, float operation for float operation,
so rankings and ties come out identical.
"""

from __future__ import annotations

import math
import re
from collections import Counter
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
    """BM25-Okapi over pre-tokenised documents, with the ATIRE idf floor of ``rank_bm25``.

    ``idf(t) = ln(N - n(t) + 0.5) - ln(n(t) + 0.5)``; terms with a negative idf get
    ``epsilon * mean idf`` (the mean taken over the vocabulary before replacement).

    Args:
        corpus: one token list per document.
        k1: term-frequency saturation.
        b: length normalisation.
        epsilon: the floor factor for negative idfs.
    """

    def __init__(
        self, corpus: Sequence[Sequence[str]], k1: float = 1.5, b: float = 0.75, epsilon: float = 0.25
    ) -> None:
        self.k1, self.b, self.epsilon = k1, b, epsilon
        self.doc_freqs = [Counter(doc) for doc in corpus]
        self.corpus_size = len(self.doc_freqs)
        doc_len = np.array([len(doc) for doc in corpus])
        self.avgdl = int(doc_len.sum()) / self.corpus_size if self.corpus_size else 0.0
        # The same operation order as rank_bm25, so that scores (and ties) are bit-identical.
        self._norm = self.k1 * (1 - self.b + self.b * doc_len / self.avgdl) if self.corpus_size else doc_len
        self.idf = self._idf()

    def _idf(self) -> dict[str, float]:
        # Vocabulary in order of first appearance: the mean's float sum depends on it.
        nd: dict[str, int] = {}
        for freqs in self.doc_freqs:
            for word in freqs:
                nd[word] = nd.get(word, 0) + 1
        idf: dict[str, float] = {}
        total = 0.0
        for word, n in nd.items():
            idf[word] = math.log(self.corpus_size - n + 0.5) - math.log(n + 0.5)
            total += idf[word]
        if idf:
            floor = self.epsilon * (total / len(idf))
            for word, value in idf.items():
                if value < 0:
                    idf[word] = floor
        return idf

    def get_scores(self, query: Sequence[str]) -> np.ndarray:
        """BM25 score of every document for ``query`` (repeated query tokens count again)."""
        score = np.zeros(self.corpus_size)
        for q in query:
            weight = self.idf.get(q) or 0
            if not weight:
                continue  # unknown term or zero idf: adds exactly 0
            q_freq = np.array([freqs.get(q, 0) for freqs in self.doc_freqs])
            score += weight * (q_freq * (self.k1 + 1) / (q_freq + self._norm))
        return score

    def top_n(self, query: Sequence[str], n: int) -> list[int]:
        """Indices of the ``n`` best documents, ranked with numpy's default (unstable) argsort."""
        return [int(i) for i in np.argsort(-self.get_scores(query))[:n]]
