"""Every committed training corpus passes the tester, judged together as ``apibank check-train data/train`` judges
it, and each generation's corpus on its own (training pools them; records and reruns read them one by one)."""

from __future__ import annotations

from pathlib import Path

import pytest

from apibank_lib.core.paths import DATA_DIR
from apibank_lib.data.check_train import CheckReport, check_corpus
from apibank_lib.data.formats.train_corpus import corpus_files

TRAIN = DATA_DIR / "train"
GENERATIONS = sorted(p for p in (TRAIN / "synthesized").rglob("corpus") if p.is_dir())


def _failures(report: CheckReport) -> list[str]:
    return [str(r) for r in report.api_rejections + report.rejected]


def test_every_committed_corpus_passes_the_tester_together() -> None:
    # The CLI's discovery: every *.yaml under data/train (a generation's superseded records are .jsonl, not read).
    files = corpus_files(TRAIN)
    assert TRAIN / "corpus" in {p.parent for p in files} and len(GENERATIONS) >= 4, files
    report = check_corpus(TRAIN)
    failures = _failures(report)
    # Pooled, an id two generations share, or an API name they define differently, is refused in the later one.
    assert not failures, f"{len(failures)} rejections, the first: " + "; ".join(failures[:5])
    assert len(report.accepted) == report.total > 0


@pytest.mark.parametrize("corpus", GENERATIONS, ids=lambda p: str(p.parent.relative_to(TRAIN / "synthesized")))
def test_each_generation_passes_the_tester_alone(corpus: Path) -> None:
    failures = _failures(check_corpus(corpus))
    assert not failures, f"{len(failures)} rejections, the first: " + "; ".join(failures[:5])
