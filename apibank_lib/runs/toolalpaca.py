"""Models answering ToolAlpaca's own evaluation instructions, converted (:func:`~apibank_lib.data.formats.toolalpaca.convert_evaluation`).

ToolAlpaca's evaluation files (``eval_simulated.json``, ``eval_real.json``) are not part of API-Bank and are
not in this repository: a user supplies them. Converted, each gold step of an instruction is a level-1 API-call
sample whose prompt describes the functions of that instruction's API entry, and whose answer is judged by
:func:`~apibank_lib.data.formats.toolalpaca.judge_call` (same function, same arguments). The APIs are never
executed (ToolAlpaca's are real web services), so a judgment is about the call alone.

A gold argument ToolAlpaca writes as a reference to an earlier step's result (``${animeId from searchAnime}``,
a :class:`~apibank_lib.data.formats.toolalpaca.StepReference`) is judged by one of two rules, recorded per argument
in :attr:`ToolAlpacaJudgment.reference_rules` (argument path -> rule):

* ``"value"``: the sample's own gold record holds the value, i.e. the referred earlier step in the sample's
  history has an output (only when the evaluation file ships solution records, ``Instances``, that line up with
  the instruction) and that output holds the field (the top-level key, else the first key of that name in a
  depth-first walk, each object's own keys first). The prediction must equal that value (scalars by their text),
  or, for a reference inside a longer string (``"https://x/${slug from listItems}"``), that string with the
  value put in.
* ``"name only"``: there is no such value (plain ``Golden_Answers`` carry no observations; an unresolved
  reference names no earlier step). The argument must be present and non-empty (not null, not blank, not an
  empty list or object); inside a longer string, the prediction must start and end with the string's own text
  around the reference and have non-blank text in its place.

Every other argument must equal the gold's. Where there is a value, the model's prompt shows it too: the
history's earlier steps then carry their observations and the referred value in place of the reference; otherwise
they show the placeholder text, ``${FIELD from STEP}``, as does the gold call's text (``gold``, and the digest
that identifies the converted file).

A sample is rendered exactly as a benchmark sample is (:func:`~apibank_lib.prompting.prompts.build_prompt`, and
:func:`~apibank_lib.prompting.chat.build_chat` in chat mode), with the entry's functions in place of a tool set, and the
answer is read by :func:`~apibank_lib.prompting.toolcalls.parse_tool_calls`, which reads every call format the runner's
models write. Answers are appended to a JSON Lines file as they come, so an interrupted evaluation resumes and a
failed request is recorded and asked again next time; the file's first line says which model, prompt mode and
source it belongs to, and a file of another model is refused rather than mixed in.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from apibank_lib.core.calls import format_call
from apibank_lib.core.errors import ConfigError, DataError
from apibank_lib.core.stats import N_BOOT, SEED, bootstrap_mean, bounds, paired_comparison
from apibank_lib.core.types import ApiCallSample
from apibank_lib.data.formats.toolalpaca import ConversionResult, display_call, judge_call
from apibank_lib.models.base import Backend
from apibank_lib.prompting.schemas import SchemaCatalog
from apibank_lib.prompting.toolcalls import parse_tool_calls
from apibank_lib.runs.runner import request_for

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["ToolAlpacaJudgment", "evaluate_converted", "load_judgments", "accuracy_table", "paired_table"]

_FORMAT = 1
"""Version of the answers file's layout (its header says which)."""


@dataclass(frozen=True)
class ToolAlpacaJudgment:
    """One converted sample, answered and judged.

    Attributes:
        key: the sample's key (``L1/api/<API>-<instruction index>/<step>``), unique within a converted file.
        dialogue_id: the instruction it belongs to (the cluster of intervals and paired tests).
        api: the ToolAlpaca API entry.
        gold: the gold call, as text (a step reference as its placeholder text).
        predicted: the first call read from the answer, as text; None when there was none.
        correct: the predicted call has the gold's function and arguments.
        output: the model's raw answer text.
        error: why no call could be read, or why the request failed (then ``failed`` is True).
        failed: the backend did not answer; such a sample is asked again when the evaluation resumes and is left
            out of accuracies.
        prompt_tokens, completion_tokens: token usage when the backend reports it.
        reference_rules: per gold argument that refers to an earlier step's result (its path: ``bookId``,
            ``filter.id``, ``ids[0]``), the rule it was judged by: ``"value"`` or ``"name only"``. Empty when
            no argument refers (and in answers files written before it was recorded).
    """

    key: str
    dialogue_id: str
    api: str
    gold: str
    predicted: str | None
    correct: bool
    output: str
    error: str | None = None
    failed: bool = False
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    reference_rules: dict[str, str] = field(default_factory=dict)


def _catalogs(result: ConversionResult) -> dict[str, SchemaCatalog]:
    """Per API entry, its functions as a catalogue (function names repeat across entries)."""
    return {g.name: SchemaCatalog({f.name: f for f in g.functions}) for g in result.apis}


def _gold_text(sample: ApiCallSample) -> str:
    return format_call(display_call(sample.gold))


def _source_digest(result: ConversionResult) -> str:
    """A short hash of the converted samples (what was asked and what is gold), the file's identity."""
    h = hashlib.sha256()
    for s in result.samples:
        h.update(json.dumps([s.key, s.api_names, _gold_text(s)], ensure_ascii=False, default=str).encode())
    return h.hexdigest()[:16]


def _header(result: ConversionResult, backend: Backend, mode: str, max_tokens: int, tool_choice: str) -> dict[str, Any]:
    return {
        "format": _FORMAT,
        "source": result.source.name,
        "source_digest": _source_digest(result),
        "model": backend.identity(),
        "prompt_mode": mode,
        "max_tokens": max_tokens,
        "tool_choice": tool_choice,
    }


def load_judgments(path: str | Path) -> tuple[dict[str, Any], list[ToolAlpacaJudgment]]:
    """The header and the judgments of an answers file (the last record of a key wins).

    Raises:
        DataError: a line that is not a judgment, named by its line number. A last line cut short by an
            interruption is ignored, so that the evaluation can resume.
    """
    path = Path(path)
    return _read_judgments(path.read_text(encoding="utf-8"), path)


def _read_judgments(text: str, path: Path) -> tuple[dict[str, Any], list[ToolAlpacaJudgment]]:
    lines = text.splitlines()
    if not lines:
        raise DataError("the answers file is empty (no header line)", path)
    records: dict[str, ToolAlpacaJudgment] = {}
    header: dict[str, Any] = {}
    for number, line in enumerate(lines, 1):
        try:
            data = json.loads(line)
            if number == 1:
                header = dict(data["header"])
                continue
            judgment = ToolAlpacaJudgment(**data)
        except (json.JSONDecodeError, KeyError, TypeError, ValueError) as exc:
            if number == len(lines) and number > 1 and not line.endswith("}"):
                break  # a record cut short by an interruption: it is asked again
            raise DataError(f"line {number} is not a ToolAlpaca judgment ({type(exc).__name__}: {exc})", path) from None
        records[judgment.key] = judgment
    return header, list(records.values())


def _judge(sample: ApiCallSample, api: str, text: str, structured: list[dict[str, Any]], usage: tuple[Any, Any]) -> ToolAlpacaJudgment:
    parsed = parse_tool_calls(text, structured or None)
    call = parsed.first
    predicted = None if call is None else format_call(call)
    error = parsed.failure if call is None else None
    if call is None and error is None:
        error = "no API call found"
    verdict = judge_call(sample, call)
    return ToolAlpacaJudgment(
        sample.key, sample.dialogue_id, api, _gold_text(sample), predicted, verdict.correct, text, error, False, *usage,
        reference_rules=verdict.rules,
    )


def evaluate_converted(
    result: ConversionResult,
    backend: Backend,
    *,
    prompt_mode: str | None = None,
    max_tokens: int = 128,
    tool_choice: str = "required",
    out: str | Path | None = None,
    limit: int | None = None,
    progress: bool | Callable[[Iterable[Any]], Iterable[Any]] = True,
) -> list[ToolAlpacaJudgment]:
    """Answer and judge every sample of a converted ToolAlpaca evaluation file, in file order.

    Args:
        result: an evaluation :class:`~apibank_lib.data.formats.toolalpaca.ConversionResult`.
        backend: the model (:func:`apibank_lib.models.registry.load_backend`).
        prompt_mode: ``chat``, ``paper`` or ``completion``; None for the backend's default (an adapter's is the
            rendering it was trained in).
        max_tokens, tool_choice: as for a run (:class:`apibank_lib.runs.config.RunConfig`).
        out: a JSON Lines file to append the answers to and resume from; None keeps them in memory only.
        limit: only the first this many samples.
        progress: a progress bar (True), none (False), or a tqdm-like wrapper of an iterable.

    Returns:
        One judgment per sample, in file order (failed requests included, flagged).

    Raises:
        ConfigError: ``result`` is not an evaluation conversion, or ``out`` holds another model's, mode's or
            source's answers.
    """
    if result.kind != "eval":
        raise ConfigError(f"{result.source} was converted as a training file; evaluate an evaluation file")
    mode = backend.prompt_mode(prompt_mode)
    header = _header(result, backend, mode, max_tokens, tool_choice)
    samples = result.samples[:limit] if limit is not None else list(result.samples)
    done: dict[str, ToolAlpacaJudgment] = {}
    path = Path(out) if out is not None else None
    if path is not None and path.is_file():
        text = path.read_text(encoding="utf-8")
        found, old = _read_judgments(text, path)
        if found != header:
            differ = sorted(k for k in set(found) | set(header) if found.get(k) != header.get(k))
            raise ConfigError(
                f"{path} holds answers of another evaluation (they differ in {', '.join(differ)}); "
                "choose another file or remove it to start over"
            )
        done = {j.key: j for j in old if not j.failed}
        if not text.endswith("\n"):  # drop a record cut short, so that the next one starts on its own line
            path.write_text(text[: text.rfind("\n") + 1], encoding="utf-8")
    elif path is not None:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps({"header": header}, sort_keys=True) + "\n", encoding="utf-8")
    catalogs = _catalogs(result)
    todo = [s for s in samples if s.key not in done]
    wrap = progress if callable(progress) else _bar if progress else (lambda it: it)
    for sample in wrap(todo):
        judgment = _answer(sample, result.origins[sample.dialogue_id], catalogs, backend, mode, max_tokens, tool_choice)
        done[sample.key] = judgment
        if path is not None:
            with path.open("a", encoding="utf-8") as f:
                f.write(json.dumps(asdict(judgment), ensure_ascii=False) + "\n")
    return [done[s.key] for s in samples]


def _bar(items: Sequence[Any]) -> Iterable[Any]:
    from tqdm.auto import tqdm

    return tqdm(items, unit="sample", desc="ToolAlpaca eval", dynamic_ncols=True)


def _answer(
    sample: ApiCallSample, api: str, catalogs: Mapping[str, SchemaCatalog], backend: Backend, mode: str, max_tokens: int, tool_choice: str
) -> ToolAlpacaJudgment:
    # The entry's functions stand in for a tool set.
    request = request_for(sample, sample.context(), catalogs[api], mode, max_tokens, tool_choice)
    try:
        comp = backend.complete(request)
    except Exception as exc:  # noqa: BLE001 - recorded and asked again on resume, never raised mid-evaluation
        return ToolAlpacaJudgment(
            sample.key, sample.dialogue_id, api, _gold_text(sample), None, False, "", f"{type(exc).__name__}: {exc}", True,
            reference_rules=judge_call(sample, None).rules,
        )
    return _judge(sample, api, comp.text, comp.raw_tool_calls, (comp.prompt_tokens, comp.completion_tokens))


def _answered(judgments: Sequence[ToolAlpacaJudgment]) -> list[ToolAlpacaJudgment]:
    return [j for j in judgments if not j.failed]


def accuracy_table(
    judgments: Mapping[str, Sequence[ToolAlpacaJudgment]], *, n_boot: int = N_BOOT, seed: int = SEED
) -> pd.DataFrame:
    """Call accuracy per model on converted ToolAlpaca samples, with a 95% interval that resamples instructions.

    Args:
        judgments: display name -> the judgments of one model (:func:`evaluate_converted`).

    Columns: model, samples (answered), instructions, correct, Call acc (%), low, high, failed requests.
    """
    import pandas as pd

    rows = []
    for name, js in judgments.items():
        ok = _answered(js)
        row: dict[str, Any] = {"model": name, "samples": len(ok), "instructions": len({j.dialogue_id for j in ok})}
        row["correct"] = sum(j.correct for j in ok)
        if ok:
            iv = bootstrap_mean([float(j.correct) for j in ok], [j.dialogue_id for j in ok], n_boot=n_boot, seed=seed)
            low, high = bounds(iv, 100)  # blank below MIN_CLUSTERS instructions
            row.update({"Call acc (%)": round(100 * iv.estimate, 2), "low": low, "high": high})
        else:
            row.update({"Call acc (%)": None, "low": None, "high": None})
        row["failed requests"] = len(js) - len(ok)
        rows.append(row)
    return pd.DataFrame(rows, columns=["model", "samples", "instructions", "correct", "Call acc (%)", "low", "high", "failed requests"])


def paired_table(
    judgments: Mapping[str, Sequence[ToolAlpacaJudgment]],
    pairs: Sequence[Sequence[str]],
    *,
    n_boot: int = N_BOOT,
    seed: int = SEED,
) -> pd.DataFrame:
    """A minus B on the samples both answered, per pair of display names: the difference in points, its 95%
    interval (instructions resampled) and a sign-flip permutation p-value over instructions."""
    import pandas as pd

    rows = []
    for a, b in pairs:
        ja = {j.key: j for j in _answered(judgments[a])}
        jb = {j.key: j for j in _answered(judgments[b])}
        keys = [k for k in ja if k in jb]
        if not keys:
            raise ConfigError(f"{a} and {b} answered no sample in common")
        cmp = paired_comparison(
            [float(ja[k].correct) for k in keys], [float(jb[k].correct) for k in keys], [ja[k].dialogue_id for k in keys],
            n_boot=n_boot, n_perm=n_boot, seed=seed,
        )
        rows.append(
            {
                "A": a, "B": b, "samples": cmp.samples, "instructions": cmp.clusters,
                "A - B (points)": round(100 * cmp.difference, 2), **dict(zip(("low", "high"), bounds(cmp, 100))),
                "p": round(cmp.p_value, 4),
            }
        )
    return pd.DataFrame(rows, columns=["A", "B", "samples", "instructions", "A - B (points)", "low", "high", "p"])
