"""Tests for the Treebank-style tokenizer and BM25-Okapi (apibank_lib/env/tools/textsearch.py)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from apibank_lib.env.tools.textsearch import BM25Okapi, word_tokenize


@pytest.mark.parametrize(
    ("text", "tokens"),
    [
        ("The Sustainable Development", ["the", "sustainable", "development"]),
        ("  padded   words  ", ["padded", "words"]),
        ("", []),
        # clitics and fused forms
        ("Don't stop, it's fine", ["do", "n't", "stop", ",", "it", "'s", "fine"]),
        (
            "We'll go; they're late, you've seen, I'm here, he'd know",
            "we 'll go ; they 're late , you 've seen , i 'm here , he 'd know".split(),
        ),
        ("cannot gonna wanna", ["can", "not", "gon", "na", "wan", "na"]),
        ("the students' grades", ["the", "students", "'", "grades"]),
        ("say 'no' now", ["say", "'", "no", "'", "now"]),
        # numbers keep inner separators; commas and colons elsewhere split
        ("12:30, 1,000 and 3.5", ["12:30", ",", "1,000", "and", "3.5"]),
        ("price: $5 or 7%", ["price", ":", "$", "5", "or", "7", "%"]),
        ("a,b", ["a", ",", "b"]),
        # hyphens and slashes stay inside words; double dashes and ellipses split
        ("state-of-the-art and/or -- wait...", ["state-of-the-art", "and/or", "--", "wait", "..."]),
        # brackets, question and exclamation marks always split
        ("(see [page 4]) really?!", ["(", "see", "[", "page", "4", "]", ")", "really", "?", "!"]),
        # double quotes become `` and ''
        ('He said "stop" now', ["he", "said", "``", "stop", "''", "now"]),
        # only a sentence-final period splits off; abbreviations keep theirs
        ("The U.S. grew 3.5% in Q4.", ["the", "u.s.", "grew", "3.5", "%", "in", "q4", "."]),
        ("The cat sat. The dog ran.", ["the", "cat", "sat", ".", "the", "dog", "ran", "."]),
        ("e.g. this and i.e. that.", ["e.g.", "this", "and", "i.e.", "that", "."]),
        ('He left "now."', ["he", "left", "``", "now", ".", "''"]),
    ],
)
def test_word_tokenize(text: str, tokens: list[str]) -> None:
    assert word_tokenize(text) == tokens


CORPUS = [
    ["solar", "panels", "on", "the", "roof"],
    ["wind", "turbines", "at", "sea"],
    ["solar", "and", "wind", "power", "on", "the", "grid"],
    ["the", "cat"],
    ["solar", "solar", "heating"],
]


def test_bm25_idf_with_negative_floor() -> None:
    bm = BM25Okapi(CORPUS)
    assert bm.avgdl == 4.2
    assert bm.idf["on"] == math.log(3.5) - math.log(2.5)
    # "solar" is in 3 of 5 documents: negative idf, replaced by 0.25 x mean idf (0.784723063334364)
    assert bm.idf["solar"] == 0.196180765833591
    assert bm.idf["the"] == bm.idf["solar"]
    assert bm.idf["cat"] == 1.0986122886681098


@pytest.mark.parametrize(
    ("query", "scores"),
    [
        (["solar"], [0.18069281063620224, 0.0, 0.15090828141045462, 0.0, 0.308598957491042]),
        (["wind", "power"], [0.0, 0.3438402418026994, 1.103911173299479, 0.0, 0.0]),
        (["cat", "cat"], [0.0, 0.0, 0.0, 2.8748732787576703, 0.0]),
        (["solar", "heating"], [0.18069281063620224, 0.0, 0.15090828141045462, 0.0, 1.5693015838314957]),
        (["missing"], [0.0] * 5),
        ([], [0.0] * 5),
    ],
)
def test_bm25_scores_match_rank_bm25_exactly(query: list[str], scores: list[float]) -> None:
    # Expected values were produced by rank_bm25.BM25Okapi (k1=1.5, b=0.75, epsilon=0.25).
    assert BM25Okapi(CORPUS).get_scores(query).tolist() == scores


def test_bm25_top_n_orders_by_score() -> None:
    bm = BM25Okapi(CORPUS)
    assert bm.top_n(["solar", "heating"], 2) == [4, 0]
    assert bm.top_n(["the"], 3) == [3, 0, 2]


def test_bm25_all_zero_scores_keep_the_first_documents() -> None:
    bm = BM25Okapi([[f"w{i}"] for i in range(73)])
    assert bm.top_n(["nothing"], 2) == [int(i) for i in np.argsort(-np.zeros(73))[:2]] == [0, 1]


def test_bm25_empty_corpus() -> None:
    bm = BM25Okapi([])
    assert bm.get_scores(["a"]).tolist() == []
    assert bm.top_n(["a"], 2) == []
