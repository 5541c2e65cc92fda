"""An interactive explorer of the benchmark and one or two scored runs, for JupyterLab (ipywidgets).

::

    from apibank_lib import load_benchmark
    from apibank_lib.report import workbench
    from apibank_lib.report.explorer import Explorer

    bench = load_benchmark()
    runs, _ = workbench.run_models(["oracle", "heuristic"], bench, limit=20)  # made once, resumed instantly after
    Explorer(bench, runs)                                              # as a cell's last expression, it shows itself

Pick a level, a dialogue (a level-3 item), one run or two side by side, and narrow the dialogues down by
error category or gold API. The view shows the dialogue with its gold API records and, for every sample,
the gold answer beside each run's prediction, executed result and verdict; at level 3 a slider steps
through each run's agent episode.

The package's ``__init__`` does not import this module, so ``import apibank_lib`` never loads ipywidgets.
"""

from __future__ import annotations

import html
import json
from collections import Counter
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import ipywidgets as widgets

from apibank_lib.core.calls import format_call
from apibank_lib.core.errors import ConfigError
from apibank_lib.core.types import ApiCallSample, ApiRecord, ResponseSample, Sample, Turn, Utterance
from apibank_lib.data.datasets import Benchmark
from apibank_lib.grading.taxonomy import ErrorCategory
from apibank_lib.runs.folder import RunFolder
from apibank_lib.runs.records import JudgmentRecord, PredictionRecord
from apibank_lib.runs.scoring import ScoredRun, check_data, scored

__all__ = ["ALL", "CORRECT", "Explorer", "load_run"]

ALL = "all"
"""The filter choice that keeps every dialogue."""

CORRECT = "correct"
"""The category-filter choice that keeps dialogues with a sample (or episode) judged correct."""

MAX_VALUE_CHARS = 400
"""Longer values (a ToolSearcher result is a whole API description) are cut, so that tables stay readable."""

_TABLE = "border-collapse:collapse;margin:0.2em 0 0.8em 0;font-size:0.92em;width:100%;table-layout:fixed"
_CELL = "border:1px solid var(--jp-border-color2,#ccc);padding:2px 6px;vertical-align:top;text-align:left"
_TEXT = "white-space:pre-wrap;word-break:break-word"
_GOOD, _BAD = "color:#1a7f37", "color:#c62828"


# --- runs ------------------------------------------------------------------------------------------


def load_run(run_dir: str | Path | RunFolder | ScoredRun, bench: Benchmark) -> ScoredRun:
    """A run folder's judgments and answers (:func:`apibank_lib.runs.scoring.scored`: scored first when it has not been
    scored yet; shown as it was scored, with a warning, when that was under another version of its protocol).

    Args:
        run_dir: the run folder (or a run already read, kept as it is).
        bench: the benchmark the run was made on.

    Raises:
        ConfigError: not a run folder, or a run made on other data than ``bench``.
    """
    if isinstance(run_dir, ScoredRun):
        check_data(run_dir.folder, run_dir.info, bench)
        return run_dir
    return scored(run_dir, bench, stacklevel=3)


def _label(run: ScoredRun) -> str:
    """How the controls name a run: the model it was started with and the protocol version it was scored under."""
    return f"{run.info.model} · {run.protocol_version}"


def _unique_labels(runs: list[ScoredRun]) -> list[str]:
    """The runs' labels, with the folder name added where two runs would read the same."""
    counts = Counter(_label(r) for r in runs)
    return [_label(r) if counts[_label(r)] == 1 else f"{_label(r)} ({r.folder.path.name})" for r in runs]


# --- what a dialogue (or level-3 item) holds -----------------------------------------------------


@dataclass(frozen=True)
class _Unit:
    """One entry of the dialogue list: a level-1/2 dialogue or a level-3 item, with its samples.

    Attributes:
        id: the dialogue id, or the level-3 item index as text (the samples' ``dialogue_id``).
        label: how the dialogue list shows it.
        turns: the transcript (a level-3 item's requirement, gold steps and response).
        samples: its samples, in dataset order.
        episode_key: the key of its agent episode (level 3), else None.
    """

    id: str
    label: str
    turns: tuple[Turn, ...]
    samples: tuple[Sample, ...]
    episode_key: str | None = None

    def entries(self) -> Iterator[tuple[str, str | None]]:
        """Every sample and episode key, each with its gold API (None for replies and episodes)."""
        for s in self.samples:
            yield s.key, s.gold.api_name if isinstance(s, ApiCallSample) else None
        if self.episode_key is not None:
            yield self.episode_key, None


def _units(bench: Benchmark, level: int) -> list[_Unit]:
    """The dialogues of a level (its items at level 3), in dataset order."""
    by_id: dict[str, list[Sample]] = {}
    for s in bench.samples(level):
        by_id.setdefault(s.dialogue_id, []).append(s)
    if level in (1, 2):
        return [_Unit(d.id, d.id, tuple(d.turns), tuple(by_id.get(d.id, ()))) for d in bench.dialogues(level)]
    units = []
    for episode in bench.episodes():
        item = episode.item
        turns = (Utterance("User", item.requirement.strip()), *item.steps, Utterance("AI", item.response))
        label = f"{item.id}: {_cut(item.requirement.strip(), 70)}"
        units.append(_Unit(str(item.id), label, turns, tuple(by_id.get(str(item.id), ())), episode.key))
    return units


# --- HTML ------------------------------------------------------------------------------------------


def _cut(text: str, limit: int = MAX_VALUE_CHARS) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _show(value: Any) -> str:
    """A value as escaped text: strings as they are, anything else as compact JSON; long ones cut."""
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    return html.escape(_cut(text))


def _code(text: str) -> str:
    return f'<code style="{_TEXT}">{html.escape(text)}</code>'


def _result(envelope: dict[str, Any] | None) -> str:
    """An executed call's result envelope: its output, or the exception it raised."""
    if envelope is None:
        return ""
    if envelope.get("exception") is not None:
        return f'<span style="{_BAD}">exception:</span> {_show(envelope["exception"])}'
    return _show(envelope.get("output"))


def _verdict(correct: bool | None, yes: str = "✓ correct", no: str = "✗ wrong") -> str:
    if correct is None:
        return ""
    return f'<span style="{_GOOD}">{yes}</span>' if correct else f'<span style="{_BAD}">{no}</span>'


def _table(rows: Sequence[str], columns: Sequence[tuple[str, Sequence[str]]]) -> str:
    """A small table: one named row per entry of ``rows``, one column per (header, cells), cells already HTML."""
    head = "".join(f'<th style="{_CELL}">{h}</th>' for h in ("", *(header for header, _ in columns)))
    body = "".join(
        f'<tr><th style="{_CELL};width:7em">{html.escape(name)}</th>'
        + "".join(f'<td style="{_CELL};{_TEXT}">{cells[i]}</td>' for _, cells in columns)
        + "</tr>"
        for i, name in enumerate(rows)
    )
    return f'<table style="{_TABLE}"><tr>{head}</tr>{body}</table>'


def _transcript(turns: Sequence[Turn]) -> str:
    """User and AI turns, and the gold API records with the result they returned."""
    rows = []
    for turn in turns:
        if isinstance(turn, ApiRecord):
            body = f"{_code(format_call(turn.call))} → {_result(turn.result)}"
        else:
            body = html.escape(turn.text)
        role = f'<th style="{_CELL};width:3.5em">{html.escape(turn.role)}</th>'
        rows.append(f'<tr>{role}<td style="{_CELL};{_TEXT}">{body}</td></tr>')
    return f'<table style="{_TABLE}">{"".join(rows)}</table>'


def _absent(prediction: PredictionRecord | None) -> str:
    """Why a run has no judgment of a sample."""
    return "<i>not in this run</i>" if prediction is None else "<i>answered after the run was scored</i>"


_API_ROWS = ("model output", "call", "result", "verdict", "category")
_REPLY_ROWS = ("reply", "ROUGE-L")
_EPISODE_ROWS = ("verdict", "gold calls", "end state", "calls made", "ended")
_STEP_ROWS = ("output", "call", "result", "error")


def _raw_output(p: PredictionRecord | None) -> str:
    """What the model wrote, as it wrote it: its text, and any tool calls its server returned unparsed."""
    if p is None:
        return ""
    parts = [_code(p.output or "")] if p.output else []
    parts += [_code(f"tool call {c.get('name')!s}: {c.get('arguments')!s}") for c in p.raw_tool_calls]
    return "<br>".join(parts) or "<i>(empty)</i>"


def _api_cells(key: str, run: ScoredRun) -> list[str]:
    """A run's raw output beside the call read from it, its result, verdict and error category."""
    j, p = run.by_key.get(key), run.predictions.get(key)
    if j is None:
        return ["", _absent(p), "", "", ""]
    if j.call is not None:
        call = _code(j.call)
        if j.n_calls and j.n_calls > 1:
            call += html.escape(f" (first of {j.n_calls} calls, {j.call_format})")
        elif j.call_format:
            call += html.escape(f" ({j.call_format})")
    elif j.backend_error is not None:
        call = f'<span style="{_BAD}">backend error:</span> {_show(j.backend_error)}'
    else:
        call = "<i>no call read</i>"
    reason = html.escape(" — ".join(x for x in (j.category, j.reason) if x))
    if j.excluded is not None:  # judged, but counted in no accuracy: say so before the verdict is read as one
        reason = f"<b>not scored</b>: {html.escape(j.excluded)}" + (f"<br>{reason}" if reason else "")
    return [_raw_output(p), call, _result(j.result), _verdict(j.correct), reason]


def _api_sample(sample: ApiCallSample, runs: Sequence[ScoredRun]) -> str:
    """The gold call and result beside each run's call, result, verdict and error category."""
    title = f"sample {sample.sample_id} · API call · {sample.gold.api_name}"
    title += " (duplicate)" if sample.duplicate else ""
    # The gold call as the runs' calls are shown (our call syntax), without the prompt's "API-Request:" lead.
    gold = ("gold", ["", _code(format_call(sample.gold.call)), _show(sample.gold.output), "", ""])
    columns = [gold, *((html.escape(_label(r)), _api_cells(sample.key, r)) for r in runs)]
    return f"<h4>{html.escape(title)}</h4>" + _table(_API_ROWS, columns)


def _reply_cells(key: str, run: ScoredRun) -> list[str]:
    """A run's reply and its ROUGE-L."""
    j, p = run.by_key.get(key), run.predictions.get(key)
    if j is None or p is None:
        return [_absent(p), ""]
    reply = html.escape(p.text()) if j.backend_error is None else f"backend error: {_show(j.backend_error)}"
    return [reply, "" if j.rouge_l is None else f"{j.rouge_l:.4f}"]


def _response_sample(sample: ResponseSample, runs: Sequence[ScoredRun]) -> str:
    """The reference reply beside each run's reply and its ROUGE-L."""
    columns = [
        ("gold", [html.escape(sample.gold), ""]),
        *((html.escape(_label(r)), _reply_cells(sample.key, r)) for r in runs),
    ]
    return f"<h4>sample {sample.sample_id} · reply</h4>" + _table(_REPLY_ROWS, columns)


def _episode_cells(key: str, run: ScoredRun) -> list[str]:
    """A run's episode: solved or not, gold calls matched, end state, calls made, how it ended."""
    j, p = run.by_key.get(key), run.predictions.get(key)
    if j is None or p is None:
        return [_absent(p), "", "", "", ""]
    # Not a verdict alone: an episode that changed nothing ends "as gold" wherever the gold calls change nothing.
    end_state = "" if j.same_end_state is None else ("same as gold" if j.same_end_state else "differs from gold")
    ended = html.escape(f"{p.stopped} after {len(p.steps)} steps") + (f": {_show(p.output)}" if p.output else "")
    return [
        _verdict(j.correct, "✓ solved", "✗ not solved"),
        f"{j.matched_calls} of {j.required_calls} made",
        end_state,
        f"{j.calls_made} ({j.tool_errors} tool errors)",
        ended,
    ]


def _step_cells(key: str, run: ScoredRun, step: int) -> list[str]:
    """What a run's episode did at step ``step`` (1-based): the model's output, the call executed, its result."""
    p = run.predictions.get(key)
    if p is None:
        return ["", "", "", ""]
    if step > len(p.steps):
        return [f"<i>ended after {len(p.steps)} steps</i>", "", "", ""]
    s = p.steps[step - 1]
    return [_show(s.output), _code(s.call) if s.call else "", _result(s.result), _show(s.error) if s.error else ""]


def _episode(key: str, runs: Sequence[ScoredRun], step: int) -> str:
    """What each run's agent episode did at step ``step``, then how each episode ended."""
    at_step = [(html.escape(_label(r)), _step_cells(key, r, step)) for r in runs]
    summary = [(html.escape(_label(r)), _episode_cells(key, r)) for r in runs]
    return (
        f"<h4>agent episode · step {step}</h4>"
        + _table(_STEP_ROWS, at_step)
        + "<h4>agent episode · outcome</h4>"
        + _table(_EPISODE_ROWS, summary)
    )


def _view(unit: _Unit, level: int, runs: Sequence[ScoredRun], step: int) -> str:
    """The whole view of one dialogue: (level 3) the agent episodes, the transcript, the samples."""
    kind = "item" if level == 3 else "dialogue"
    parts = [f"<h3>Level {level} · {kind} {html.escape(unit.id)}</h3>"]
    # The episodes come first, right under the step slider that moves through them.
    if unit.episode_key is not None and any(unit.episode_key in r.predictions for r in runs):
        parts.append(_episode(unit.episode_key, runs, step))
    parts.append(f"<h4>{'gold steps' if level == 3 else 'dialogue'}</h4>" + _transcript(unit.turns))
    for sample in unit.samples:
        if isinstance(sample, ApiCallSample):
            parts.append(_api_sample(sample, runs))
        else:
            parts.append(_response_sample(sample, runs))
    return "".join(parts)


# --- the widget ------------------------------------------------------------------------------------


_LABELS = {"description_width": "8em"}
"""The controls' labels share one width, so that the controls line up."""


def _dropdown(description: str, options: Sequence[tuple[str, Any]] = (), **kwargs: Any) -> widgets.Dropdown:
    return widgets.Dropdown(options=list(options), description=description, style=_LABELS, **kwargs)


def _level_buttons(level: int) -> widgets.ToggleButtons:
    buttons = widgets.ToggleButtons(
        options=[("1", 1), ("2", 2), ("3", 3)],
        value=level,
        description="level",
        style=_LABELS | {"button_width": "4em"},
    )
    # ipywidgets 8 puts a ToggleButtons' description above its buttons; this class lines it up with the dropdowns'.
    buttons.add_class("widget-inline-hbox")
    return buttons


def _set_options(dropdown: widgets.Dropdown, options: list[tuple[str, Any]]) -> None:
    """Replace a dropdown's options, keeping its value when it is still offered, else choosing the first."""
    keep = dropdown.value
    dropdown.options = options
    values = [value for _, value in options]
    # ipywidgets leaves a dropdown that had no options without a value when options arrive, so choose explicitly.
    dropdown.value = keep if keep in values else (values[0] if values else None)


def _matches(judgment: JudgmentRecord, category: str) -> bool:
    if category == ALL:
        return True
    return judgment.correct is True if category == CORRECT else judgment.category == category


class Explorer:
    """Browse a benchmark's dialogues with one or two runs' predictions and verdicts beside the gold.

    Display it as the last expression of a notebook cell, or show ``explorer.widget``. Every control is an
    attribute, so code (and tests) can drive it as a person would, e.g. ``explorer.dialogue_select.value = id``;
    ``explorer.view.value`` is the HTML shown.

    The dialogue list holds the dialogues (level-3 items) with at least one sample, or episode, that one of the
    chosen runs answered and that matches both filters; at a level where the chosen runs answered nothing (or
    without runs) it holds every dialogue that matches the API filter, so the gold can still be read there.

    Args:
        bench: the benchmark the runs were made on.
        runs: run folders (paths or :class:`~apibank_lib.runs.folder.RunFolder`); one not scored yet is scored first.
        level: the level shown first (1, 2 or 3).

    Attributes:
        bench: the benchmark.
        runs: the runs, read (:class:`ScoredRun`).
        level_select: the level (1, 2, 3).
        run_select: the run shown (an index into ``runs``).
        compare_select: a second run shown beside the first (an index into ``runs``, or None).
        category_select: ``all``, an error category present in the chosen runs' judgments, or ``correct``.
        api_select: ``all`` or a gold API name of the level.
        dialogue_select: the dialogue id (level-3 item index as text) shown.
        step_slider: the agent-episode step shown (level 3; hidden when no chosen run has an episode there).
        view: the HTML view.
        widget: the whole explorer, an ipywidgets container.

    Raises:
        ConfigError: a level other than 1, 2 or 3, a folder that is not a run, or a run made on other data.
    """

    def __init__(self, bench: Benchmark, runs: Sequence[str | Path | RunFolder] = (), *, level: int = 1) -> None:
        if level not in (1, 2, 3):
            raise ConfigError(f"level must be 1, 2 or 3, not {level!r}")
        self.bench = bench
        self.runs = [load_run(r, bench) for r in runs]
        self._units = {lv: _units(bench, lv) for lv in (1, 2, 3)}
        self._busy = False
        offered = list(zip(_unique_labels(self.runs), range(len(self.runs))))
        self.level_select = _level_buttons(level)
        self.run_select = _dropdown("run", offered)
        self.compare_select = _dropdown(
            "compare with", [("none", None), *offered], value=1 if len(offered) > 1 else None
        )
        self.category_select = _dropdown("category")
        self.api_select = _dropdown("API")
        self.dialogue_select = _dropdown("dialogue", layout={"width": "48em"})
        self.step_slider = widgets.IntSlider(value=1, min=1, max=1, description="step", style=_LABELS)
        self.view = widgets.HTML()
        self.widget = self._layout()
        self._connect()
        self._refresh_choices()
        self._refresh_steps(reset=True)
        self._render()

    def _layout(self) -> widgets.VBox:
        runs = widgets.HBox([self.run_select, self.compare_select])
        if not self.runs:
            runs.layout.display = "none"
        filters = widgets.HBox([self.category_select, self.api_select])
        return widgets.VBox([self.level_select, runs, filters, self.dialogue_select, self.step_slider, self.view])

    def _connect(self) -> None:
        for control in (self.level_select, self.run_select, self.compare_select, self.category_select, self.api_select):
            control.observe(self._on_scope, names="value")
        self.dialogue_select.observe(self._on_dialogue, names="value")
        self.step_slider.observe(self._on_step, names="value")

    # --- display -------------------------------------------------------------------------------

    def _repr_mimebundle_(self, **kwargs: Any) -> dict[str, Any] | None:
        """The widget's display data, so that ``Explorer(...)`` as a cell's last expression shows it."""
        return self.widget._repr_mimebundle_(**kwargs)  # type: ignore[no-any-return]

    def _ipython_display_(self) -> None:
        """Display the widget (IPython prefers this to ``_repr_mimebundle_``)."""
        from IPython.display import display

        display(self.widget)

    # --- state ---------------------------------------------------------------------------------

    @property
    def chosen(self) -> list[ScoredRun]:
        """The runs shown: the first, and the one to compare with unless it is none or the same."""
        picks = dict.fromkeys(i for i in (self.run_select.value, self.compare_select.value) if i is not None)
        return [self.runs[i] for i in picks]

    def _unit(self) -> _Unit | None:
        return next((u for u in self._units[self.level_select.value] if u.id == self.dialogue_select.value), None)

    def _judgments(self, key: str) -> list[JudgmentRecord]:
        return [r.by_key[key] for r in self.chosen if key in r.by_key]

    def _listed(self, unit: _Unit, covered: bool) -> bool:
        """Whether a dialogue has a sample or episode that the chosen runs judged and that matches both filters."""
        category, api = self.category_select.value, self.api_select.value
        for key, gold_api in unit.entries():
            judged = self._judgments(key)
            if covered and not judged:
                continue
            if api != ALL and gold_api != api:
                continue
            if category == ALL or any(_matches(j, category) for j in judged):
                return True
        return False

    def _category_options(self, level: int) -> list[tuple[str, str]]:
        order = {c.value: i for i, c in enumerate(ErrorCategory)}
        present = {j.category for r in self.chosen for j in r.by_key.values() if j.level == level and j.category}
        ranked = sorted(present, key=lambda c: (order.get(c, len(order)), c))
        return [(c, c) for c in (ALL, *ranked, CORRECT)]

    def _api_options(self, level: int) -> list[tuple[str, str]]:
        names = sorted({s.gold.api_name for s in self.bench.samples(level, "api") if isinstance(s, ApiCallSample)})
        return [(n, n) for n in (ALL, *names)]

    @contextmanager
    def _quiet(self) -> Iterator[None]:
        """Change controls without each change re-rendering (the caller renders once at the end)."""
        self._busy = True
        try:
            yield
        finally:
            self._busy = False

    def _refresh_choices(self) -> None:
        """Rebuild the filters' and the dialogue list's options for the level and runs chosen."""
        level = self.level_select.value
        with self._quiet():
            _set_options(self.category_select, self._category_options(level))
            _set_options(self.api_select, self._api_options(level))
            units = self._units[level]
            covered = any(self._judgments(key) for u in units for key, _ in u.entries())
            _set_options(self.dialogue_select, [(u.label, u.id) for u in units if self._listed(u, covered)])

    def _refresh_steps(self, *, reset: bool) -> None:
        """Size the step slider to the longest episode shown, and hide it where there is none."""
        unit = self._unit()
        key = unit.episode_key if unit is not None else None
        lengths = [len(r.predictions[key].steps) for r in self.chosen if key is not None and key in r.predictions]
        with self._quiet():
            self.step_slider.max = max([1, *lengths])
            self.step_slider.description = f"step (of {self.step_slider.max})"
            if reset:
                self.step_slider.value = 1
        self.step_slider.layout.display = "" if any(lengths) else "none"

    def _render(self) -> None:
        unit = self._unit()
        if unit is None:
            self.view.value = "<p><i>No dialogue matches these filters.</i></p>"
        else:
            self.view.value = _view(unit, self.level_select.value, self.chosen, self.step_slider.value)

    # --- reactions -----------------------------------------------------------------------------

    def _on_scope(self, _change: dict[str, Any]) -> None:
        if self._busy:
            return
        shown = self.dialogue_select.value
        self._refresh_choices()
        self._refresh_steps(reset=self.dialogue_select.value != shown)  # another dialogue starts at step 1
        self._render()

    def _on_dialogue(self, _change: dict[str, Any]) -> None:
        if self._busy:
            return
        self._refresh_steps(reset=True)
        self._render()

    def _on_step(self, _change: dict[str, Any]) -> None:
        if not self._busy:
            self._render()
