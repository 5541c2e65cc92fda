"""Training examples: (prompt, target) pairs cut and rendered exactly as evaluation samples are.

A corpus dialogue becomes a level-1/2 :class:`~apibank_lib.core.types.Dialogue` or a
level-3 :class:`~apibank_lib.core.types.Level3Item`; the evaluation's own sample
cutting (:func:`~apibank_lib.data.datasets.cut_samples`), prompt builder
(:func:`~apibank_lib.prompting.prompts.build_prompt`) and target renderer
(:func:`~apibank_lib.prompting.prompts.target_text`) then make the pairs, so a model is
trained on the very text it is later evaluated with. The flattened completion
prompt ends with its lead (``API-Request:`` or ``AI:``); the target is what
follows the lead, ended by a newline (the runner's stop sequence).
"""

from __future__ import annotations

import hashlib
import json
import random
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, Sequence

from apibank_lib.core.shares import read_shares
from apibank_lib.core.types import Sample, ToolSchema
from apibank_lib.data.datasets import cut_level3_samples, cut_samples
from apibank_lib.data.formats.train_corpus import ABILITY_LEVEL, SEARCHER, CorpusDialogue, to_dialogue, to_level3_item
from apibank_lib.prompting.modes import TEMPLATE_MODES
from apibank_lib.prompting.prompts import LEADS, build_prompt, target_text
from apibank_lib.prompting.schemas import SchemaCatalog

__all__ = ["API_ORDERS", "parse_api_order", "TrainingExample", "answer_text", "ordered_apis", "samples_of", "examples_from_samples", "examples_from_corpus", "write_examples", "read_examples", "fingerprint", "select", "mix", "group_of", "parse_shares", "examples_from_toolalpaca"]


Renderer = Callable[[list[Sample], Any], list["TrainingExample"]]
"""Samples and the catalogue their prompts describe -> training examples (one rendering of them)."""

APPEARANCE = "appearance"
SHUFFLED = "shuffled"
API_ORDERS = (APPEARANCE, SHUFFLED)
"""The order a training prompt describes its APIs in: ``appearance`` (first call first, as our evaluation prompts
do) or ``shuffled`` (a seeded permutation per sample). In order of appearance the first API described is the
first one called, a cue no other data keeps: an official release lists its APIs in an order unrelated to the calls
(the original rendered a Python set), and a model trained on that cue calls the first API described
(``docs/results.md``, the transfer account)."""


def parse_api_order(text: str) -> str | dict[str, str]:
    """An ``--api-order`` value: one order for every prompt (``shuffled``), or one per rendering mode
    (``chat=appearance,paper=shuffled``: each example's prompt in the order its mode is evaluated with).

    Raises:
        ConfigError: an unknown order or mode, or a malformed pair.
    """
    from apibank_lib.core.errors import ConfigError

    text = text.strip()
    if "=" not in text:
        if text not in API_ORDERS:
            raise ConfigError(f"unknown API order {text!r}; choose one of {', '.join(API_ORDERS)}, or MODE=ORDER pairs")
        return text
    out: dict[str, str] = {}
    for part in text.split(","):
        mode, sep, order = (x.strip() for x in part.partition("="))
        if not sep or mode not in TEMPLATE_MODES or order not in API_ORDERS:
            raise ConfigError(
                f"--api-order: cannot read {part.strip()!r}; write MODE=ORDER pairs with a mode from "
                f"{', '.join(TEMPLATE_MODES)} and an order from {', '.join(API_ORDERS)} (chat=appearance,paper=shuffled)"
            )
        out[mode] = order
    return out


def ordered_apis(samples: Iterable[Sample], order: str = APPEARANCE, seed: int = 0) -> list[Sample]:
    """``samples`` with the APIs their prompts describe in ``order`` (one of :data:`API_ORDERS`).

    A shuffled sample's permutation comes from a hash of the seed and its key, so a sample is described the same
    way whatever else is drawn.

    Raises:
        ConfigError: an unknown order.
    """
    from dataclasses import replace

    from apibank_lib.core.errors import ConfigError

    if order not in API_ORDERS:
        raise ConfigError(f"unknown API order {order!r}; choose one of {', '.join(API_ORDERS)}")
    if order == APPEARANCE:
        return list(samples)
    out = []
    for s in samples:
        names = list(s.api_names)
        random.Random(int.from_bytes(hashlib.sha256(f"{seed}:{s.key}".encode()).digest()[:8], "big")).shuffle(names)
        out.append(replace(s, api_names=tuple(names)))
    return out


@dataclass(frozen=True)
class TrainingExample:
    """One supervised example.

    Attributes:
        key: the sample key (``L1/api/<dialogue id>/<index>``), unique within a corpus.
        level: the evaluation level whose prompt layout it uses.
        task: ``api`` or ``response``.
        prompt: what the model is shown: the flattened completion prompt (ends with the lead), or a chat
            template's rendering (``chat`` and ``paper`` modes, :mod:`apibank_lib.training.chat_examples`).
        target: what the model should write after the prompt.
        mode: ``completion`` (plain text, ended by a newline), ``chat`` or ``paper`` (rendered by a model's chat
            template, special tokens written as text, ended by the template's end of turn).
    """

    key: str
    level: int
    task: str
    prompt: str
    target: str
    mode: str = "completion"

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready; a completion example is written without its mode, as before modes existed (so the files
        and fingerprints of earlier corpora stay as they were)."""
        d = asdict(self)
        if d["mode"] == "completion":
            del d["mode"]
        return d


def samples_of(dialogues: Iterable[CorpusDialogue], schemas: dict[str, ToolSchema]) -> list[Sample]:
    """Evaluation-style samples of accepted corpus dialogues (duplicate API-call samples left out)."""
    out: list[Sample] = []
    for n, d in enumerate(dialogues):
        if ABILITY_LEVEL[d.ability] == 3:
            item = to_level3_item(d, schemas, n)
            cut = cut_level3_samples(item)
            out.extend(_renamed(s, d.id) for s in cut)
        else:
            out.extend(s for s in cut_samples(to_dialogue(d, schemas)) if not s.duplicate)
    return out


def _renamed(sample: Sample, dialogue_id: str) -> Sample:
    """Level-3 samples carry the item index as their id; give them the corpus dialogue's id instead."""
    from dataclasses import replace

    return replace(sample, dialogue_id=dialogue_id)


def answer_text(sample: Sample) -> str:
    """The gold answer as the model writes it after the prompt's lead (``API-Request:`` / ``AI:``), stripped."""
    target = target_text(sample)
    lead = LEADS[sample.kind]
    if sample.kind == "api" and target.startswith(lead):
        target = target[len(lead) :]
    return target.strip()


def examples_from_samples(samples: Iterable[Sample], catalog: Any, *, shots: int = 0) -> list[TrainingExample]:
    """Render samples as (prompt, target) pairs with the evaluation's prompt builder."""
    out: list[TrainingExample] = []
    for s in samples:
        prompt = build_prompt(s.context(), catalog, shots=shots)
        out.append(TrainingExample(s.key, s.level, s.kind, prompt.text, " " + answer_text(s) + "\n"))
    return out


def examples_from_corpus(
    report: Any,
    *,
    tasks: Sequence[str] = ("api", "response"),
    levels: Sequence[int] = (1, 2, 3),
    shots: int = 0,
    render: Renderer | None = None,
    api_order: str = APPEARANCE,
    seed: int = 0,
) -> list[TrainingExample]:
    """Every training example of a tester report's accepted dialogues, in corpus order.

    Args:
        report: a :class:`~apibank_lib.data.check_train.CheckReport`.
        tasks: which sample kinds to keep.
        levels: which evaluation layouts to keep.
        shots: worked examples in the prompt (0, as evaluated by default).
        render: how samples become examples (default: the completion rendering, :func:`examples_from_samples`;
            :func:`~apibank_lib.training.chat_examples.mode_renderer` renders through a chat template).
        api_order, seed: the order each prompt describes its APIs in (:func:`ordered_apis`).
    """
    schemas = report.schemas
    samples = [s for s in samples_of(report.accepted, schemas) if s.kind in tasks and s.level in levels]
    samples = ordered_apis(samples, api_order, seed)
    if render is not None:
        return render(samples, SchemaCatalog(schemas))
    return examples_from_samples(samples, SchemaCatalog(schemas), shots=shots)


def write_examples(examples: Iterable[TrainingExample], path: str | Path) -> Path:
    """Write examples as JSON lines (sorted keys, so the same examples give the same bytes)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8") as f:
        for ex in examples:
            f.write(json.dumps(ex.to_dict(), sort_keys=True, ensure_ascii=False) + "\n")
    return path


def read_examples(path: str | Path) -> Iterator[TrainingExample]:
    """Read examples written by :func:`write_examples`; a broken line raises naming the file and line."""
    from apibank_lib.core.errors import DataError

    with Path(path).open(encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                yield TrainingExample(**json.loads(line))
            except (json.JSONDecodeError, TypeError) as exc:
                raise DataError(f"not a training example: {exc}", path, n) from exc


def fingerprint(examples: Sequence[TrainingExample]) -> str:
    """A short hash of the examples' text, recorded with a trained model."""
    h = hashlib.sha256()
    for ex in examples:
        h.update(json.dumps(ex.to_dict(), sort_keys=True).encode())
    return h.hexdigest()[:16]


def select(examples: Sequence[TrainingExample], n: int | None, seed: int = 0) -> list[TrainingExample]:
    """A seeded random subset of ``n`` examples (all when ``n`` is None), in a seeded shuffled order."""
    rng = random.Random(seed)
    out = list(examples)
    rng.shuffle(out)
    return out if n is None else out[:n]


def group_of(ex: TrainingExample) -> str:
    """An example's group for mixing: ``L<level>/<task>``."""
    return f"L{ex.level}/{ex.task}"


def mix(examples: Sequence[TrainingExample], n: int, shares: dict[str, float], seed: int = 0) -> list[TrainingExample]:
    """A seeded training mix of ``n`` examples drawn by group shares, in a seeded shuffled order.

    Each group (``L1/api``, ``L2/response``, ...) gets ``round(n * share)``
    examples, or all it has; budget left over goes to the API-call examples not
    yet drawn (a shortage of one group is filled with calls, which the paper's
    Call accuracy measures). Groups without a share are not drawn from first.
    """
    rng = random.Random(seed)
    by_group: dict[str, list[TrainingExample]] = {}
    for ex in examples:
        by_group.setdefault(group_of(ex), []).append(ex)
    chosen: list[TrainingExample] = []
    rest: list[TrainingExample] = []
    for group in sorted(by_group):
        pool = list(by_group[group])
        rng.shuffle(pool)
        quota = min(len(pool), round(n * shares.get(group, 0.0)))
        chosen += pool[:quota]
        rest += [ex for ex in pool[quota:] if ex.task == "api"]
    rng.shuffle(rest)
    chosen += rest[: max(0, n - len(chosen))]
    rng.shuffle(chosen)
    return chosen[:n]


def parse_shares(text: str) -> dict[str, float]:
    """``"L1/api=0.5,L2/api=0.3"`` -> ``{"L1/api": 0.5, "L2/api": 0.3}`` (a clear error otherwise)."""

    def unknown(key: str) -> str | None:
        if key.startswith(("L1/", "L2/", "L3/")):
            return None
        return f"unknown group {key!r}; groups are L1/api, L2/response, ..."

    return read_shares(text, "--mix", "GROUP=SHARE", "L1/api=0.5", unknown)


def examples_from_toolalpaca(
    result: Any, *, tasks: Sequence[str] = ("api", "response"), shots: int = 0, render: Renderer | None = None,
    api_order: str = APPEARANCE, seed: int = 0,
) -> list[TrainingExample]:
    """Training examples of a converted ToolAlpaca training file, cut and rendered like level-1 samples.

    Each converted instance is a level-1 dialogue; its prompt describes the
    functions of the API entry it came from (function names repeat across
    ToolAlpaca's entries, so each dialogue gets its own entry's catalogue).

    Args:
        result: a training :class:`~apibank_lib.data.formats.toolalpaca.ConversionResult`.
        render, api_order, seed: as for :func:`examples_from_corpus`.
    """
    groups = {g.name: {f.name: f for f in g.functions} for g in result.apis}
    out: list[TrainingExample] = []
    for d in result.dialogues:
        catalog = SchemaCatalog(groups.get(result.origins.get(d.id, ""), {}))
        samples = [s for s in cut_samples(d) if not s.duplicate and s.kind in tasks and all(n in catalog for n in s.api_names)]
        samples = ordered_apis(samples, api_order, seed)
        out.extend(render(samples, catalog) if render is not None else examples_from_samples(samples, catalog, shots=shots))
    return out
