"""The benchmark and the training corpora as Hugging Face ``datasets``, in the layout trainers read.

One row per sample (an API call to make, or a reply to write), in the OpenAI messages-and-tools layout that TRL's
``SFTTrainer`` and transformers' chat templates take directly:

* ``messages``: the chat prompt the evaluation shows the model (:func:`~apibank_lib.prompting.chat.build_chat`:
  system, user, assistant turns with ``tool_calls``, ``tool`` messages) followed by the gold answer as the last
  assistant message (:func:`~apibank_lib.training.chat_examples.answer_message`). Tool-call arguments are objects,
  as chat templates read them.
* ``tools``: the APIs the prompt describes, as ``{"type": "function", "function": {name, description, parameters}}``
  with JSON Schema parameters.
* ``gold_call`` and ``gold_result`` (API-call samples; the result as JSON text) or ``gold_reply`` (reply samples),
  and ids that map back to our samples: ``id`` is :attr:`Sample.key <apibank_lib.core.types.ApiCallSample.key>`, with ``level``, ``kind``,
  ``dialogue_id``, ``sample_id``.

Messages and tools have a different shape in every row (each API has its own parameters), so they are stored with
``datasets``' ``Json`` feature (JSON text underneath, objects when read): an Arrow struct would give every call the
union of every API's parameters, filled with nulls, and a template would render them. ``datasets`` reads a
``Json`` float back imprecisely (``0.7`` as ``0.7000000000000001``): the recorded results, whose numbers are computed,
are JSON text instead (exact); call arguments are text in our data and nearly always in a release (2 floats in the
development half's 2,271 arguments).

The benchmark is one :class:`~datasets.DatasetDict` with a split per level; each corpus is one with a ``train``
split. Both are written with ``save_to_disk`` (read back by ``load_from_disk``) and as Parquet files that the
folder's dataset card names, so that ``load_dataset(folder, name)`` reads them too.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from apibank_lib.core.errors import ConfigError
from apibank_lib.core.types import ApiCallSample, Sample
from apibank_lib.data.datasets import Benchmark
from apibank_lib.prompting.chat import build_chat
from apibank_lib.training.chat_examples import answer_message

__all__ = [
    "BENCHMARK",
    "DEFAULT_CORPORA",
    "HfExport",
    "benchmark_rows",
    "corpus_rows",
    "export_hf",
    "features",
    "sample_of_row",
    "sample_row",
]

BENCHMARK = "benchmark"
"""The benchmark's dataset name inside an export folder."""

DEFAULT_CORPORA: dict[str, tuple[str, ...]] = {
    "corpus-ai-written": ("data/train/corpus",),
    "corpus-model-made": (
        "data/train/synthesized/values/corpus",
        "data/train/synthesized/multi-agent/corpus",
        "data/train/synthesized/attempt-1/multi-agent/corpus",
        "data/train/synthesized/attempt-2/multi-agent/corpus",
    ),
}
"""The committed training corpora an export holds by default (dataset name -> corpus folders, relative to the
project): the corpus written by AI assistants following our brief, and the five-agent pipeline's model-made one
(every generation, as notebook 06 judges it)."""


def features() -> Any:
    """The rows' ``datasets.Features`` (the same for the benchmark and the corpora)."""
    from datasets import Features, Json, List, Value

    return Features(
        {
            "id": Value("string"),
            "data": Value("string"),
            "level": Value("int32"),
            "kind": Value("string"),
            "dialogue_id": Value("string"),
            "sample_id": Value("int32"),
            "duplicate": Value("bool"),
            "messages": List(Json()),
            "tools": List(Json()),
            "gold_call": Json(),
            "gold_result": Value("string"),
            "gold_reply": Value("string"),
        }
    )


def sample_row(sample: Sample, catalog: Any, data: str) -> dict[str, Any]:
    """One sample as a row: its chat prompt and gold answer as messages, its tools, its gold and its ids.

    Args:
        sample: an API-call or reply sample.
        catalog: the APIs its prompt may describe (a tool set, or a
            :class:`~apibank_lib.prompting.schemas.SchemaCatalog` for a training corpus).
        data: the data source's name (``bundled``, a release folder's name, or a corpus name).
    """
    chat = build_chat(sample.context(), catalog)
    is_call = isinstance(sample, ApiCallSample)
    return {
        "id": sample.key,
        "data": data,
        "level": sample.level,
        "kind": sample.kind,
        "dialogue_id": sample.dialogue_id,
        "sample_id": sample.sample_id,
        "duplicate": bool(sample.duplicate),
        "messages": [*chat.messages, answer_message(sample)],
        "tools": chat.tools,
        "gold_call": {"name": sample.gold.api_name, "arguments": dict(sample.gold.args)} if is_call else None,
        "gold_result": json.dumps(sample.gold.result, ensure_ascii=False, sort_keys=True, default=str) if is_call else None,
        "gold_reply": None if is_call else sample.gold,
    }


def benchmark_rows(bench: Benchmark, level: int) -> list[dict[str, Any]]:
    """Every sample of a level (both kinds, the original cutter's duplicates flagged), in dataset order."""
    toolset = bench.toolset(level)
    return [sample_row(s, toolset, bench.name) for s in bench.samples(level)]


def corpus_rows(paths: Sequence[str | Path], name: str) -> tuple[list[dict[str, Any]], dict[str, int]]:
    """Every sample of a training corpus's accepted dialogues, as the recipe cuts them, and the tester's counts.

    Raises:
        ConfigError: no accepted dialogue in ``paths``.
    """
    from apibank_lib.data.check_train import check_corpus
    from apibank_lib.prompting.schemas import SchemaCatalog
    from apibank_lib.training.export import samples_of

    report = check_corpus([str(p) for p in paths])
    if not report.accepted:
        raise ConfigError(f"corpus {name!r}: no accepted dialogue in {' '.join(map(str, paths))}")
    catalog = SchemaCatalog(report.schemas)
    rows = [sample_row(s, catalog, name) for s in samples_of(report.accepted, report.schemas)]
    return rows, {"accepted": len(report.accepted), "rejected": len(report.rejected)}


def sample_of_row(row: Mapping[str, Any], bench: Benchmark) -> Sample:
    """The benchmark sample a row was made from, checked against the row.

    Raises:
        ConfigError: the row's id names no sample of ``bench``, or the sample renders to other messages (the
            export was made from other data, or by another version of the chat rendering).
    """
    level = int(row["level"])
    found = next((s for s in bench.samples(level) if s.key == row["id"]), None)
    if found is None:
        raise ConfigError(f"row {row['id']!r}: no such sample in the {bench.name} data (level {level})")
    expected = sample_row(found, bench.toolset(level), bench.name)
    if not _same(_plain(expected["messages"]), row["messages"]) or not _same(_plain(expected["tools"]), row["tools"]):
        raise ConfigError(f"row {row['id']!r}: its messages differ from the sample's rendering (exported from other data?)")
    return found


def _same(a: Any, b: Any) -> bool:
    """Equal as JSON values, floats within a few units in the last place: ``datasets``' ``Json`` feature parses
    floats imprecisely when it reads them back (``0.7`` as ``0.7000000000000001``)."""
    if isinstance(a, float) or isinstance(b, float):
        return isinstance(a, (int, float)) and isinstance(b, (int, float)) and math.isclose(a, b, rel_tol=1e-12)
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    return a == b


def _plain(value: Any) -> Any:
    """A value as JSON reads it back (tuples as lists, keys as text), for comparing a row with a fresh rendering."""
    return json.loads(json.dumps(value, ensure_ascii=False, default=str))


@dataclass
class HfExport:
    """What :func:`export_hf` wrote.

    Attributes:
        out: the export folder (its ``README.md`` is the dataset card).
        counts: dataset name -> split -> rows.
        notes: dataset name -> a line on where its rows came from.
    """

    out: Path
    counts: dict[str, dict[str, int]] = field(default_factory=dict)
    notes: dict[str, str] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready."""
        return {"out": str(self.out), "counts": self.counts, "notes": self.notes}


def _write(name: str, splits: dict[str, list[dict[str, Any]]], out: Path) -> dict[str, int]:
    from datasets import Dataset, DatasetDict
    from datasets.utils import are_progress_bars_disabled, disable_progress_bars, enable_progress_bars

    feats = features()
    dd = DatasetDict({split: Dataset.from_list(_json_ready(rows), features=feats) for split, rows in splits.items()})
    quiet = are_progress_bars_disabled()
    disable_progress_bars()  # a bar per split and file would bury the command's own table
    try:
        dd.save_to_disk(str(out / name))
        parquet = out / "parquet" / name
        parquet.mkdir(parents=True, exist_ok=True)
        for split, ds in dd.items():
            ds.to_parquet(str(parquet / f"{split}.parquet"))
    finally:
        if not quiet:
            enable_progress_bars()
    return {split: len(ds) for split, ds in dd.items()}


def _json_ready(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Rows whose JSON columns hold only JSON values (recorded results may hold tuples or dates)."""
    json_columns = ("messages", "tools", "gold_call")
    return [{**r, **{c: _plain(r[c]) for c in json_columns}} for r in rows]


def export_hf(
    out: str | Path,
    *,
    bench: Benchmark | None = None,
    corpora: Mapping[str, Iterable[str | Path]] | None = None,
    project_root: str | Path | None = None,
) -> HfExport:
    """Write the benchmark and training corpora as ``datasets`` (on disk and as Parquet) with a dataset card.

    Args:
        out: the export folder (made if missing; datasets already in it are replaced).
        bench: the benchmark to export (every level, both sample kinds); None for none.
        corpora: dataset name -> corpus files or folders; None for :data:`DEFAULT_CORPORA` (relative to
            ``project_root``), ``{}`` for none.
        project_root: where :data:`DEFAULT_CORPORA`'s folders are (default: the project's root).

    Raises:
        ConfigError: a corpus name that is not a plain folder name, or a corpus with no accepted dialogue.
    """
    from apibank_lib.core.paths import PROJECT_ROOT

    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    result = HfExport(out)
    if bench is not None:
        splits = {f"level{level}": benchmark_rows(bench, level) for level in (1, 2, 3)}
        result.counts[BENCHMARK] = _write(BENCHMARK, splits, out)
        result.notes[BENCHMARK] = f"the {bench.name} benchmark ({bench.root})"
    if corpora is None:
        root = Path(project_root) if project_root is not None else PROJECT_ROOT
        corpora = {name: [root / p for p in paths if (root / p).is_dir()] for name, paths in DEFAULT_CORPORA.items()}
    for name, paths in corpora.items():
        if not name or "/" in name or name.startswith(".") or name in (BENCHMARK, "parquet"):
            raise ConfigError(f"corpus name {name!r}: use a plain folder name other than {BENCHMARK} and parquet")
        paths = list(paths)
        rows, tested = corpus_rows(paths, name)
        result.counts[name] = _write(name, {"train": rows}, out)
        result.notes[name] = (
            f"{tested['accepted']} dialogues accepted by the tester ({tested['rejected']} rejected) from "
            + ", ".join(_shown(p, project_root) for p in paths)
        )
    (out / "README.md").write_text(dataset_card(result, bench), encoding="utf-8")
    return result


def _shown(path: str | Path, project_root: str | Path | None) -> str:
    """A path relative to the project where it lies inside it (so that the card does not name this machine)."""
    from apibank_lib.core.paths import PROJECT_ROOT

    root = Path(project_root) if project_root is not None else PROJECT_ROOT
    try:
        return str(Path(path).resolve().relative_to(root.resolve()))
    except ValueError:
        return Path(path).name


def dataset_card(export: HfExport, bench: Benchmark | None) -> str:
    """The folder's ``README.md``: configs for ``load_dataset``, what each dataset is, its counts and license."""
    lines = ["---", "license: apache-2.0" if bench is None or not bench.official else "license: other", "configs:"]
    for name, splits in export.counts.items():
        lines.append(f"- config_name: {name}")
        lines.append("  data_files:")
        for split in splits:
            lines += [f"  - split: {split}", f"    path: parquet/{name}/{split}.parquet"]
    lines += ["---", "", "# API-Bank samples in the messages-and-tools layout", ""]
    lines.append(
        "Written by `apibank export --format hf` (apibank_lib). One row per sample: `messages` is the chat prompt "
        "the workbench evaluates a model on (system, user, assistant turns with `tool_calls`, `tool` messages) and "
        "the gold answer as the last assistant message; `tools` lists the APIs the prompt describes, with JSON "
        "Schema parameters. TRL's `SFTTrainer` trains on `messages` and `tools` as they are."
    )
    lines += ["", "| dataset | split | rows | where from |", "| --- | --- | --- | --- |"]
    for name, splits in export.counts.items():
        for split, n in splits.items():
            lines.append(f"| {name} | {split} | {n} | {export.notes[name]} |")
    lines += [
        "",
        (
            "Load a dataset with `datasets.load_from_disk(\"<folder>/<dataset>\")`, or its Parquet files with "
            "`datasets.load_dataset(\"<folder>\", \"<dataset>\")`. Columns: `id` (the workbench's sample key, "
            "`L<level>/<kind>/<dialogue>/<index>`), `data`, `level`, `kind` (`api` or `response`), `dialogue_id`, "
            "`sample_id`, `duplicate` (the original cutter's repeated sample, left out of scoring), `messages`, "
            "`tools`, `gold_call` and `gold_result` (API-call samples; the result as JSON text), `gold_reply` (reply "
            "samples)."
        ),
        "",
        "Messages and tools are stored as JSON objects (the `Json` feature), since every API has parameters of its own.",
        "",
        "## License",
        "",
    ]
    if bench is not None and bench.official:
        lines.append(
            "The benchmark rows come from a copy of the official API-Bank release and carry that release's license; "
            "do not publish them under another. The corpora are apibank_lib's, Apache-2.0."
        )
    else:
        lines.append(
            "Apache-2.0, as apibank_lib. The bundled benchmark and the corpora were written in the apibank_lib "
            "project by AI assistants following its briefs (and, for the model-made corpus, by the five-agent "
            "pipeline with a small local model); they are not written by people."
        )
    return "\n".join(lines) + "\n"
