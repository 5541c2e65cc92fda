"""Versioned errata for a benchmark's gold records: defects found in the data, each with a check and a decision.

An official API-Bank release has gold records that cannot be right: a call naming a device its own database does
not hold, an output whose letter case differs from that database, search keywords that cannot tell which API the
dialogue needs. Scoring a model against them counts the data's defects against the model. An errata file lists
such records, in the manner of BFCL's versioned corrections:

* a file per data set in ``data/errata/``: ``api-bank.yaml`` for an official release (it is not in this
  repository, so entries name records, never copy them), ``bundled.yaml`` for our benchmark (empty until a
  defect is found); each file has a ``version``;
* an entry names its record by level, file stem (dialogue id, or level-3 item id), API, and sample id or the
  record's rank among that API's records in the file; gives the defect class (:data:`DEFECTS`) and the decision
  (:data:`DECISIONS`: ``exclude`` it from scoring, or ``correct`` its gold), with the reason;
* and it carries a check that is verified on the data actually loaded before anything is applied
  (:data:`CHECKS`), plus, where known, the SHA-256 of the record's content. An entry whose record is missing,
  whose content hash differs, or whose check does not hold is reported and not applied.

The ``v2`` protocol applies the errata of the data it grades (:attr:`~apibank_lib.env.protocols.GradingProtocol.errata`)
and records the file, its version and what was applied; ``paper`` never does. Verification needs the state a
record was made in, so :func:`verify` takes the grader's ``state`` function (:meth:`apibank_lib.grading.grader.Grader.sandbox_for`).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from apibank_lib.core.errors import CallError, DataError, ParseError, ToolError
from apibank_lib.core.paths import PROJECT_ROOT
from apibank_lib.core.types import ApiCallSample, ApiRecord
from apibank_lib.env.tools.searcher import retrieved_names

__all__ = [
    "CHECKS",
    "DECISIONS",
    "DEFECTS",
    "AppliedErratum",
    "Errata",
    "ErrataReport",
    "Erratum",
    "errata_dir",
    "load_errata",
    "record_sha256",
    "verify",
]

DEFECTS = {
    "unknown_entity": "the gold call names an entity the data's database does not hold",
    "output_inconsistent": "the gold output differs from what the data's own database gives",
    "ambiguous_keywords": "the gold search keywords cannot determine the API the dialogue needs",
    "search_output_sibling": "the gold search output is another API than the one the dialogue then calls",
    "truncated_text": "a text of the record is cut short",
}
"""The defect classes an erratum can name."""

DECISIONS = {
    "exclude": "left out of scoring (every sample whose gold is the record); counted apart",
    "correct": "judged against a corrected gold (the correction the entry names)",
}
"""What an erratum does to its record."""

CHECKS = {
    "gold_call_raises": "the gold call, replayed in the record's own state on the data loaded, raises or returns an "
    "exception, while the gold record has none",
    "output_case_only": "the gold call's output on the data loaded differs from the gold output, and equals it once "
    "every text is lower-cased",
    "search": "the gold call is a search with the entry's keywords, its recorded output lists the entry's API "
    "(``output``), and the dialogue then calls the entry's ``needed`` API",
}
"""The checks an entry can carry; the entry applies only when its check holds on the data loaded."""

CORRECTIONS = {
    "output_from_database": "the gold output is what the gold call returns on the data's own database",
    "search_by_need": "the search is judged by the API the dialogue then calls (the gold output is not used)",
}
"""The corrections a ``correct`` decision can name."""


@dataclass(frozen=True)
class Erratum:
    """One entry of an errata file.

    Attributes:
        id: a stable id within its file (``E01``).
        level: 1, 2 or 3.
        file: the dialogue's file stem (levels 1-2) or the level-3 item id.
        api: the gold record's API.
        sample: the id of the (non-duplicate) API-call sample whose gold is the record; or None, and then
        occurrence: the record's rank among ``api``'s records in the file (1 = the first).
        defect: a key of :data:`DEFECTS`.
        decision: a key of :data:`DECISIONS`.
        correction: for ``correct``, a key of :data:`CORRECTIONS`.
        check: ``{"kind": <a key of CHECKS>, ...}`` with what the kind needs (``keywords``, ``output``, ``needed``).
        reason: in words.
        record_sha256: the SHA-256 of the record's content (:func:`record_sha256`), where known.
    """

    id: str
    level: int
    file: str
    api: str
    defect: str
    decision: str
    check: dict[str, Any]
    reason: str
    sample: int | None = None
    occurrence: int = 1
    correction: str | None = None
    record_sha256: str | None = None

    @property
    def where(self) -> str:
        """The record in words, for reports."""
        at = f"sample {self.sample}" if self.sample is not None else f"{self.api} record {self.occurrence}"
        return f"level {self.level}, {self.file}, {at}"


@dataclass(frozen=True)
class Errata:
    """An errata file: its name (``api-bank``), version and entries."""

    name: str
    version: str
    entries: tuple[Erratum, ...]
    path: Path | None = None

    @property
    def label(self) -> str:
        """``api-bank@2``: what results record."""
        return f"{self.name}@{self.version}"


@dataclass(frozen=True)
class AppliedErratum:
    """An erratum whose check held: the samples it covers, and for a correction the corrected gold envelope."""

    erratum: Erratum
    keys: tuple[str, ...]
    corrected_result: dict[str, Any] | None = None


@dataclass
class ErrataReport:
    """What verifying an errata file on one data set gave.

    Attributes:
        errata: the file.
        applied: erratum id -> what applies.
        not_applied: erratum id -> why not (record not found, content hash or check failed).
    """

    errata: Errata
    applied: dict[str, AppliedErratum] = field(default_factory=dict)
    not_applied: dict[str, str] = field(default_factory=dict)
    _by_key: dict[str, AppliedErratum] = field(default_factory=dict, repr=False)

    def for_sample(self, key: str) -> AppliedErratum | None:
        """The applied erratum that covers a sample key, if any."""
        if not self._by_key:
            self._by_key = {k: a for a in self.applied.values() for k in a.keys}
        return self._by_key.get(key)

    def summary(self) -> dict[str, Any]:
        """JSON-ready: the file, its version, what was applied and what was not (with why)."""
        return {
            "errata": self.errata.label,
            "applied": {i: {"decision": a.erratum.decision, "samples": list(a.keys)} for i, a in self.applied.items()},
            "not_applied": dict(self.not_applied),
        }

    def rows(self) -> list[dict[str, Any]]:
        """One row per entry, for tables and ``apibank validate``."""
        out = []
        for e in self.errata.entries:
            applied = self.applied.get(e.id)
            out.append(
                {
                    "id": e.id,
                    "record": e.where,
                    "api": e.api,
                    "defect": e.defect,
                    "decision": e.decision if e.decision == "exclude" else f"correct: {e.correction}",
                    "applied": applied is not None,
                    "samples": len(applied.keys) if applied else 0,
                    "why not": self.not_applied.get(e.id, ""),
                    "reason": e.reason,
                }
            )
        return out


# --- reading --------------------------------------------------------------------------------------


def errata_dir() -> Path:
    """``data/errata/`` in the project."""
    return PROJECT_ROOT / "data" / "errata"


def _entry(raw: Any, index: int, path: Path) -> Erratum:
    where = f"entry {index + 1}"
    if not isinstance(raw, dict):
        raise DataError(f"{where} is not a mapping", path)
    try:
        entry = Erratum(
            id=str(raw["id"]),
            level=int(raw["level"]),
            file=str(raw["file"]),
            api=str(raw["api"]),
            defect=str(raw["defect"]),
            decision=str(raw["decision"]),
            check=dict(raw["check"]),
            reason=str(raw["reason"]),
            sample=None if raw.get("sample") is None else int(raw["sample"]),
            occurrence=int(raw.get("occurrence", 1)),
            correction=raw.get("correction"),
            record_sha256=raw.get("record_sha256"),
        )
    except KeyError as exc:
        raise DataError(f"{where} has no field {exc.args[0]!r}", path) from None
    except (TypeError, ValueError) as exc:
        raise DataError(f"{where}: {exc}", path) from None
    problems = [
        f"unknown defect {entry.defect!r}" if entry.defect not in DEFECTS else "",
        f"unknown decision {entry.decision!r}" if entry.decision not in DECISIONS else "",
        f"unknown check {entry.check.get('kind')!r}" if entry.check.get("kind") not in CHECKS else "",
        f"a correction must be one of {sorted(CORRECTIONS)}"
        if entry.decision == "correct" and entry.correction not in CORRECTIONS
        else "",
    ]
    problems = [p for p in problems if p]
    if problems:
        raise DataError(f"{where} ({entry.id}): {'; '.join(problems)}", path)
    return entry


def load_errata(path: str | Path) -> Errata:
    """Read an errata file (YAML: ``name``, ``version``, ``entries``).

    Raises:
        DataError: the file is missing or malformed, naming the entry and the field.
    """
    import yaml

    path = Path(path)
    try:
        raw = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except OSError as exc:
        raise DataError(f"cannot read the errata file ({exc.strerror})", path) from None
    except yaml.YAMLError as exc:
        raise DataError(f"not YAML: {exc}", path) from None
    if not isinstance(raw, dict) or "version" not in raw:
        raise DataError("an errata file is a mapping with a 'version' and 'entries'", path)
    entries = tuple(_entry(e, i, path) for i, e in enumerate(raw.get("entries") or []))
    ids = [e.id for e in entries]
    if len(set(ids)) != len(ids):
        raise DataError(f"entry ids repeat: {sorted({i for i in ids if ids.count(i) > 1})}", path)
    return Errata(str(raw.get("name", path.stem)), str(raw["version"]), entries, path)


# --- verifying on the data loaded ----------------------------------------------------------------------


def record_sha256(record: ApiRecord) -> str:
    """The SHA-256 of a gold record's content (API, arguments, result envelope) as canonical JSON."""
    content = {"api_name": record.api_name, "args": record.args, "result": record.result}
    return hashlib.sha256(json.dumps(content, sort_keys=True, ensure_ascii=False, default=str).encode()).hexdigest()


def _lower(value: Any) -> Any:
    if isinstance(value, str):
        return value.lower()
    if isinstance(value, dict):
        return {_lower(k): _lower(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_lower(v) for v in value]
    return value


def _locate(entry: Erratum, samples: list[ApiCallSample]) -> tuple[ApiCallSample | None, str]:
    """The first sample whose gold is the entry's record, or why none is."""
    mine = [s for s in samples if s.dialogue_id == entry.file and not s.duplicate]
    if not mine:
        return None, f"no file {entry.file} at level {entry.level}"
    of_api = [s for s in mine if s.gold.api_name == entry.api]
    if entry.sample is not None:
        found = [s for s in mine if s.sample_id == entry.sample]
        if not found or found[0].gold.api_name != entry.api:
            return None, f"sample {entry.sample} of {entry.file} is not a {entry.api} call"
        return found[0], ""
    if len(of_api) < entry.occurrence:
        return None, f"{entry.file} has {len(of_api)} {entry.api} record(s), not {entry.occurrence}"
    return of_api[entry.occurrence - 1], ""


def _check(
    entry: Erratum, sample: ApiCallSample, state: Callable[[ApiCallSample], Any]
) -> tuple[bool, str, dict[str, Any] | None]:
    """(holds, why not, the gold call's envelope on the data when the check ran it)."""
    kind, gold = entry.check["kind"], sample.gold
    if kind == "search":
        keywords = gold.args.get("keywords")
        if keywords != entry.check.get("keywords"):
            return False, f"the keywords are {keywords!r}, not {entry.check.get('keywords')!r}", None
        found = retrieved_names(gold.output)
        if found[:1] != [entry.check.get("output")]:
            return False, f"the recorded output lists {found[:1]}, not {entry.check.get('output')!r}", None
        if sample.needed_api != entry.check.get("needed"):
            return False, f"the dialogue then calls {sample.needed_api}, not {entry.check.get('needed')!r}", None
        return True, "", None
    try:
        ran = state(sample).execute(gold.call).to_dict()
    except (CallError, ParseError, ToolError) as exc:
        ran = {"output": None, "exception": f"{type(exc).__name__}: {exc}"}
    if kind == "gold_call_raises":
        if gold.result.get("exception") is not None:
            return False, "the gold record itself records an exception", ran
        if ran.get("exception") is None:
            return False, "the gold call succeeds on this data", ran
        return True, "", ran
    # output_case_only
    if ran.get("exception") is not None:
        return False, f"the gold call raises on this data ({ran['exception']})", ran
    if ran.get("output") == gold.output:
        return False, "the gold output equals the database's", ran
    if _lower(ran.get("output")) != _lower(gold.output):
        return False, "the gold output differs from the database's by more than letter case", ran
    return True, "", ran


def verify(errata: Errata, samples: Iterable[ApiCallSample], state: Callable[[ApiCallSample], Any]) -> ErrataReport:
    """Check every entry on the data loaded, and say which apply.

    Args:
        errata: the file.
        samples: every API-call sample of the data, every level (duplicates included: an erratum covers every
            sample whose gold is its record).
        state: the sandbox a sample is judged in (the grader's), to run gold calls for the checks.
    """
    samples = list(samples)
    report = ErrataReport(errata)
    by_level: dict[int, list[ApiCallSample]] = {}
    for s in samples:
        by_level.setdefault(s.level, []).append(s)
    for entry in errata.entries:
        sample, why = _locate(entry, by_level.get(entry.level, []))
        if sample is None:
            report.not_applied[entry.id] = f"record not found: {why}"
            continue
        if entry.record_sha256 and record_sha256(sample.gold) != entry.record_sha256:
            report.not_applied[entry.id] = "the record's content hash differs: this copy holds another record there"
            continue
        holds, why, ran = _check(entry, sample, state)
        if not holds:
            report.not_applied[entry.id] = f"check {entry.check['kind']} does not hold: {why}"
            continue
        keys = tuple(s.key for s in by_level[entry.level] if s.gold is sample.gold)
        corrected = None
        if entry.decision == "correct" and entry.correction == "output_from_database" and ran is not None:
            corrected = {**sample.gold.result, "output": ran.get("output")}
        report.applied[entry.id] = AppliedErratum(entry, keys, corrected)
    return report
