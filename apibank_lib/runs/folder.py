"""Run folders: what a run asked for, what the model answered, how it was judged.

A run is a folder, written append-only so that an interrupted run resumes where
it stopped and scoring can be redone without querying a model again::

    config.json        RunInfo: the settings, the run's identity, the backend, the data
    predictions.jsonl  one PredictionRecord per line, appended and flushed as answered
    episodes-<max steps>steps-<retriever>.jsonl
                       the level-3 agent episodes, one file per episode settings
    summary.json       what the last invocation of the runner did
    judgments.jsonl    one JudgmentRecord per line (written by scoring)
    metrics.json       the aggregated metrics, with coverage (written by scoring)

The settings and the plan are :mod:`apibank_lib.runs.config`'s, the records :mod:`apibank_lib.runs.records`',
and what folders of earlier layouts hold is read through :mod:`apibank_lib.runs.legacy`.
``RunFolder(path).to_frame()`` gives the judgments as a pandas DataFrame.

What a folder holds is decided by what changes an answer. Teacher-forced samples (levels 1-3, the context is the
gold dialogue) depend on the model, the data, the protocol, the prompt mode and the decoding: that is the folder's
identity, so one such combination answers each sample once, whatever else a command asks for. Agent episodes also
depend on the step limit and on the retriever (the model sees search results): those two make the episodes'
identity (:meth:`RunConfig.episode_identity`), and each episode identity has a file of its own in the folder.

Folders written before this layout (their identity holds ``max_steps``, and their episodes are in
``predictions.jsonl``) still load and still resume: :func:`apibank_lib.runs.runner.locate_run` finds them when no folder
of the new name exists, their episodes are read where they are, and episodes of other settings go to a file of
their own.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import IO, Any

from apibank_lib.core.errors import ConfigError, DataError
from apibank_lib.env.protocols import get_protocol
from apibank_lib.runs.config import RunConfig
from apibank_lib.runs.legacy import FORMAT_VERSION, prompt_mode_of, settings_of, upgrade
from apibank_lib.runs.records import JudgmentRecord, Metrics, PredictionRecord, Predictions

__all__ = ["RunInfo", "RunFolder", "PredictionWriter"]


@dataclass
class RunInfo:
    """The content of a run's ``config.json``.

    Attributes:
        identity: see :meth:`RunConfig.identity`.
        config: the full settings of the last invocation (``RunConfig`` as a dict).
        backend: what the backend reports about itself (never secrets).
        data: the data root the run used.
        official_release: whether that root is an official release.
        code_version: the package version and git commit.
        plans: what every command that wrote into the folder asked for (its levels, limit, tasks and level-3
            mode, each once, in order): what the folder is expected to hold is their union. Folders written before
            plans were kept have one, read from ``config``.
        episodes: the identity of the episodes the folder's scores are about (:meth:`RunConfig.episode_identity`)
            and the file that holds them (``file``); None when no command asked for episodes. A folder written
            before episodes had files of their own gives it from its identity (:meth:`episode_set`).
        format_version: the layout of ``config.json`` (:data:`apibank_lib.runs.legacy.FORMAT_VERSION` when
            written; a folder of an older layout is read through :func:`apibank_lib.runs.legacy.upgrade`).
    """

    identity: dict[str, Any]
    config: dict[str, Any]
    backend: dict[str, Any]
    data: str
    official_release: bool
    code_version: str
    plans: list[dict[str, Any]] = field(default_factory=list)
    episodes: dict[str, Any] | None = None
    format_version: int = FORMAT_VERSION

    @property
    def protocol(self) -> str:
        """The protocol's name."""
        return str(self.identity["protocol"])

    def episode_set(self) -> dict[str, Any] | None:
        """The episodes' identity and file (``{"max_steps", "retriever", "file"}``), or None when no command that
        wrote the folder asked for episodes (a folder of layout 1 has it filled in from its identity when read)."""
        return dict(self.episodes) if self.episodes is not None else None

    @property
    def retriever(self) -> str:
        """The retriever the run's searches are graded with: the one its episodes searched with (when it was named
        for them), else the one the last command named, else its protocol's."""
        named = (self.episodes or {}).get("retriever") or self.identity.get("retriever") or self.config.get("retriever")
        return str(named) if named else get_protocol(self.protocol).retriever

    @property
    def prompt_mode(self) -> str:
        """How the model was shown each sample (``chat``, ``paper``, ``completion`` or ``reference``; the names of
        older folders read by :func:`apibank_lib.runs.legacy.prompt_mode_of`)."""
        return prompt_mode_of(self.identity)

    @property
    def model(self) -> str:
        """The model spec the run was started with."""
        return str(self.config.get("model", ""))

    def run_config(self) -> RunConfig:
        """The settings as a :class:`RunConfig`."""
        return settings_of(self.config)


def _write_json(path: Path, data: Any) -> None:
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(json.dumps(data, indent=2, ensure_ascii=False, default=str) + "\n", encoding="utf-8")
    os.replace(tmp, path)


class RunFolder:
    """A run folder on disk (it need not exist yet).

    Args:
        path: the folder.

    Attributes:
        config_path, predictions_path, judgments_path, metrics_path, summary_path: its files.
    """

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.config_path = self.path / "config.json"
        self.predictions_path = self.path / "predictions.jsonl"
        self.judgments_path = self.path / "judgments.jsonl"
        self.metrics_path = self.path / "metrics.json"
        self.summary_path = self.path / "summary.json"
        self.warnings_path = self.path / "warnings.json"

    def __repr__(self) -> str:
        return f"RunFolder({str(self.path)!r})"

    def exists(self) -> bool:
        """Whether the folder holds a run (a ``config.json``)."""
        return self.config_path.is_file()

    # --- config ----------------------------------------------------------------------------------

    def read_info(self) -> RunInfo:
        """The run's ``config.json``.

        Raises:
            ConfigError: the folder holds no run.
            DataError: the file is not a run config.
        """
        if not self.path.exists():
            raise ConfigError(f"{self.path} does not exist: give a run folder (apibank run writes one per model)")
        if not self.exists():
            raise ConfigError(f"{self.path} is not a run folder (it has no config.json)")
        try:
            raw = upgrade(json.loads(self.config_path.read_text(encoding="utf-8")))
            return RunInfo(**{f.name: raw[f.name] for f in fields(RunInfo)})
        except (json.JSONDecodeError, KeyError, TypeError) as exc:
            raise DataError(
                f"not a run config of this version ({type(exc).__name__}: {exc})", self.config_path
            ) from exc

    def write_info(self, info: RunInfo) -> None:
        """Write ``config.json`` (creating the folder)."""
        self.path.mkdir(parents=True, exist_ok=True)
        _write_json(self.config_path, asdict(info))

    # --- warnings ---------------------------------------------------------------------------------

    def read_warnings(self) -> list[dict[str, str]]:
        """What went wrong in a way the answers alone do not show (e.g. a server that ignored the tools)."""
        if not self.warnings_path.is_file():
            return []
        return json.loads(self.warnings_path.read_text(encoding="utf-8"))  # type: ignore[no-any-return]

    def add_warning(self, kind: str, message: str) -> None:
        """Record a warning (``kind``: a short tag such as ``tools_ignored``)."""
        self.path.mkdir(parents=True, exist_ok=True)
        _write_json(self.warnings_path, [*self.read_warnings(), {"kind": kind, "message": message}])

    def discard(self) -> Path | None:
        """Move the answers, judgments, metrics and warnings aside (``discarded-N/``) so the run starts over.

        Returns:
            The folder they went to, or None when there was nothing to move.
        """
        named = (self.predictions_path, self.judgments_path, self.metrics_path, self.summary_path, self.warnings_path)
        files = [p for p in named if p.is_file()] + sorted(self.path.glob("episodes-*.jsonl"))
        if not files:
            return None
        n = 1
        while (self.path / f"discarded-{n}").exists():
            n += 1
        target = self.path / f"discarded-{n}"
        target.mkdir()
        for p in files:
            os.replace(p, target / p.name)
        return target

    # --- predictions -----------------------------------------------------------------------------

    def episodes_path(self) -> Path | None:
        """The file that holds the episodes the folder's scores are about (:meth:`RunInfo.episode_set`), or None when
        no command asked for episodes (or the folder holds no run yet)."""
        if not self.exists():
            return None
        episodes = self.read_info().episode_set()
        return self.path / episodes["file"] if episodes else None

    def read_predictions(self, *, repair: bool = False) -> Predictions:
        """The last record per sample key, and the lines that could not be read.

        Teacher-forced samples come from ``predictions.jsonl``, episodes from the file of the folder's episode
        identity (:meth:`episodes_path`). A last line without its newline (a crash mid-write) is left out; with
        ``repair`` it is also cut from the file so appending can continue safely. A broken line elsewhere is left
        out and reported, never fatal.
        """
        samples = _read_records(self.predictions_path, repair)
        episodes_path = self.episodes_path()
        if episodes_path is None or episodes_path == self.predictions_path:
            return samples
        # Episodes of other settings may sit in predictions.jsonl (a folder written before episodes had files of
        # their own): they are not the ones asked for now.
        kept = {k: r for k, r in samples.records.items() if r.kind != "episode"}
        episodes = _read_records(episodes_path, repair)
        records = kept | {k: r for k, r in episodes.records.items() if r.kind == "episode"}
        return Predictions(records, samples.dropped + [f"{episodes_path.name} {d}" for d in episodes.dropped])

    @contextmanager
    def prediction_writer(self) -> Iterator[PredictionWriter]:
        """Append records to ``predictions.jsonl`` (episodes to their own file), each flushed as soon as it is
        written."""
        self.path.mkdir(parents=True, exist_ok=True)
        episodes_path = self.episodes_path() or self.predictions_path
        with self.predictions_path.open("a", encoding="utf-8") as f:
            writer = PredictionWriter(f, episodes_path if episodes_path != self.predictions_path else None)
            try:
                yield writer
            finally:
                writer.close()

    def write_summary(self, summary: dict[str, Any]) -> None:
        """Write ``summary.json``."""
        _write_json(self.summary_path, summary)

    # --- judgments and metrics ---------------------------------------------------------------------

    def write_judgments(self, records: list[JudgmentRecord]) -> None:
        """Write ``judgments.jsonl`` (replacing an earlier one)."""
        tmp = self.judgments_path.with_suffix(".jsonl.tmp")
        with tmp.open("w", encoding="utf-8") as f:
            for rec in records:
                f.write(json.dumps(rec.to_dict(), ensure_ascii=False, default=str) + "\n")
        os.replace(tmp, self.judgments_path)

    def read_judgments(self) -> list[JudgmentRecord]:
        """The judgments, in the order scoring wrote them.

        Raises:
            ConfigError: the run has not been scored yet.
        """
        if not self.judgments_path.is_file():
            raise ConfigError(
                f"{self.path} has not been scored yet: run `apibank score {self.path}` (or apibank_lib.score_run)"
            )
        out = []
        for number, line in enumerate(self.judgments_path.read_text(encoding="utf-8").splitlines(), start=1):
            if line.strip():
                try:
                    out.append(JudgmentRecord.from_dict(json.loads(line)))
                except (json.JSONDecodeError, TypeError) as exc:
                    raise DataError(f"not a judgment record ({exc})", self.judgments_path, number) from exc
        return out

    def write_metrics(self, metrics: Metrics) -> None:
        """Write ``metrics.json``."""
        _write_json(self.metrics_path, metrics.to_dict())

    def read_metrics(self) -> Metrics:
        """The metrics written by scoring.

        Raises:
            ConfigError: the run has not been scored yet.
        """
        if not self.metrics_path.is_file():
            raise ConfigError(
                f"{self.path} has not been scored yet: run `apibank score {self.path}` (or apibank_lib.score_run)"
            )
        return Metrics.from_dict(json.loads(self.metrics_path.read_text(encoding="utf-8")))

    # --- tables ------------------------------------------------------------------------------------

    def to_frame(self, what: str = "judgments") -> Any:
        """The run as a pandas DataFrame, one row per sample or episode.

        Args:
            what: ``judgments`` (the verdicts; needs a scored run) or ``predictions``
                (the answers, scored or not).
        """
        import pandas as pd

        if what == "judgments":
            rows = [r.to_dict() for r in self.read_judgments()]
            columns = [f.name for f in fields(JudgmentRecord)]
        elif what == "predictions":
            rows = [r.to_dict() for r in self.read_predictions().records.values()]
            columns = [f.name for f in fields(PredictionRecord)]
        else:
            raise ConfigError(f"to_frame shows 'judgments' or 'predictions', not {what!r}")
        frame = pd.DataFrame(rows, columns=columns)
        # Verdicts and counts that do not apply to a row are missing, not False or 0, so means skip them.
        nullable = {"correct": "boolean", "same_end_state": "boolean", "rouge_l": "Float64", "latency_s": "Float64"}
        nullable |= {
            c: "Int64"
            for c in (
                "required_calls",
                "matched_calls",
                "calls_made",
                "tool_errors",
                "prompt_tokens",
                "completion_tokens",
                "attempts",
            )
        }
        return frame.astype({c: t for c, t in nullable.items() if c in frame.columns})


class PredictionWriter:
    """Appends prediction records to an open file, one flushed JSON line each; episodes go to their own file
    (opened on the first episode) when one is given."""

    def __init__(self, file: IO[str], episodes_path: Path | None = None) -> None:
        self._file = file
        self._episodes_path = episodes_path
        self._episodes: IO[str] | None = None
        self.written = 0

    def write(self, record: PredictionRecord) -> None:
        """Append one record and flush it to the operating system."""
        target = self._file
        if record.kind == "episode" and self._episodes_path is not None:
            if self._episodes is None:
                self._episodes = self._episodes_path.open("a", encoding="utf-8")
            target = self._episodes
        target.write(json.dumps(record.to_dict(), ensure_ascii=False, default=str) + "\n")
        target.flush()
        self.written += 1

    def close(self) -> None:
        """Close the episodes' file if one was opened (the main file belongs to the caller)."""
        if self._episodes is not None:
            self._episodes.close()
            self._episodes = None


def _read_records(path: Path, repair: bool) -> Predictions:
    """The last record per key in one predictions file (see :meth:`RunFolder.read_predictions`)."""
    if not path.is_file():
        return Predictions({})
    raw = path.read_bytes()
    dropped: list[str] = []
    cut_note: str | None = None
    if raw and not raw.endswith(b"\n"):
        cut = raw.rfind(b"\n") + 1
        cut_note = "line %d" % (raw[:cut].count(b"\n") + 1)
        raw = raw[:cut]
        if repair:
            with path.open("r+b") as f:
                f.truncate(cut)
    records: dict[str, PredictionRecord] = {}
    for number, line in enumerate(raw.decode("utf-8", errors="replace").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            rec = PredictionRecord.from_dict(json.loads(line))
        except (json.JSONDecodeError, TypeError, AttributeError) as exc:
            dropped.append(f"line {number}: not a prediction record ({type(exc).__name__}: {exc})")
            continue
        records[rec.key] = rec
    if cut_note is not None:
        dropped.append(f"{cut_note}: cut off before its end (an interrupted write)")
    return Predictions(records, dropped)
