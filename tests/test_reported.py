"""Figures reported elsewhere, as the data files hold them: checks that a transcription is right."""

from __future__ import annotations

from apibank_lib.data.reported import toolrl_reported
from apibank_lib.grading.toolrl import TOOLRL


def _counts(figure: float, entries: int) -> list[int]:
    return [k for k in range(entries + 1) if round(100 * k / entries, 2) == figure]


def test_toolrl_figures_are_whole_counts_that_add_up() -> None:
    data = toolrl_reported()
    assert data["protocol"] == TOOLRL.version and "secondary summary" in data["note"]
    n = {key: data["entries"][key] for key in ("1", "2", "3", "overall")}
    assert n["1"] + n["2"] + n["3"] == n["overall"]
    assert len(data["rows"]) == 6
    for row in data["rows"]:
        counts = {lv: _counts(row[f"l{lv}"], n[lv]) for lv in ("1", "2", "3")}
        overall = _counts(row["overall"], n["overall"])
        assert all(len(c) == 1 for c in counts.values()) and len(overall) == 1, row
        assert sum(c[0] for c in counts.values()) == overall[0], row  # the levels' counts make the overall one
