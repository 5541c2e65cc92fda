"""Twins of a training corpus: the same dialogues under new API and parameter names, for training a model not to
lean on names.

``apibank twin --data data/train/corpus --out DIR --change names,parameters`` writes every corpus file of the folder
again with each API and each input parameter renamed word by word from the same synonym table as a benchmark's twin
(:mod:`apibank_lib.data.twins`), the seed choosing among synonyms. A corpus defines its own APIs, so a name none of
whose words the table knows keeps its form; ``twin.json`` lists the renaming and what kept its name. Descriptions,
utterances, outputs and ToolSearcher's keywords (which describe a need, not a name) stay as written.

The twin is a corpus like any other: the synthesis tester accepts what it accepted in the source (``apibank
check-train DIR``), and the recipe draws from it beside the source (``apibank train --source data/train/corpus
--source DIR``, an equal share each). The ``values`` change is not offered for corpora: they have no databases whose
values the dialogues share, so it would rewrite text alone.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import yaml

from apibank_lib.core.calls import format_call, parse_calls
from apibank_lib.core.errors import ConfigError, DataError, ParseError
from apibank_lib.core.types import ApiCall
from apibank_lib.core.yamlfile import read_yaml
from apibank_lib.data.formats.train_corpus import corpus_files
from apibank_lib.data.twins import TWIN_FILE, new_names, synonyms_path
from apibank_lib.env.renaming import Renaming

__all__ = ["CORPUS_CHANGES", "corpus_renaming", "is_corpus", "write_corpus_twin"]

CORPUS_CHANGES = ("names", "parameters")
"""What a corpus twin can change."""


def is_corpus(root: str | Path) -> bool:
    """Whether ``root`` is a folder of training corpus files (YAML with ``apis`` and ``dialogues``), not a benchmark."""
    root = Path(root)
    return root.is_dir() and not (root / "lv1-lv2-samples").is_dir() and bool(corpus_files(root))


def _names(files: Iterable[Path]) -> tuple[set[str], set[str]]:
    apis: set[str] = set()
    params: set[str] = set()
    for path in files:
        for api in read_yaml(path).get("apis") or []:
            if isinstance(api, dict) and isinstance(api.get("name"), str):
                apis.add(api["name"])
                params.update(k for k in (api.get("input_parameters") or {}) if isinstance(k, str))
    return apis, params


def corpus_renaming(apis: set[str], params: set[str], seed: int, change: Iterable[str],
                    table: Mapping[str, Any] | None = None) -> tuple[Renaming, list[str]]:
    """New names for a corpus's APIs and parameters, and the names that keep their form (no word of theirs in the
    synonym table)."""
    change = set(change)
    unknown = change - set(CORPUS_CHANGES)
    if unknown:
        raise ConfigError(f"--change {','.join(sorted(unknown))}: a training corpus's twin changes {' and '.join(CORPUS_CHANGES)}")
    table = table if table is not None else read_yaml(synonyms_path())
    # The corpus sections only fill what the benchmark's tables lack (so that a benchmark's twins never change).
    api_words = {**table.get("corpus_api_words", {}), **table.get("api_words", {})}
    parameter_words = {**table.get("corpus_parameter_words", {}), **table.get("parameter_words", {})}
    new_apis, new_params, unnamed_apis, unnamed_params = new_names(
        apis, params, seed, change, api_words, parameter_words, table.get("whole", {}),
    )
    return Renaming(new_apis, new_params), unnamed_apis + unnamed_params


def _renamed_call(text: str, renaming: Renaming, where: str) -> str:
    try:
        (call,) = parse_calls(text if text.startswith("[") else f"[{text}]")
    except ParseError as exc:
        raise DataError(f"the call {text!r} does not parse: {exc}", where) from exc
    out = format_call(ApiCall(renaming.api(call.name), renaming.args(call.args)))
    return out if text.startswith("[") else out[1:-1]


def _renamed_turn(turn: Any, renaming: Renaming, where: str) -> Any:
    if not isinstance(turn, dict) or not isinstance(turn.get("api"), str):
        return turn
    out = dict(turn)
    out["api"] = _renamed_call(turn["api"], renaming, where)
    if isinstance(turn.get("retrieves"), list):
        out["retrieves"] = [renaming.api(n) if isinstance(n, str) else n for n in turn["retrieves"]]
    return out


def _renamed_file(data: dict[str, Any], renaming: Renaming, where: str) -> dict[str, Any]:
    out = dict(data)
    apis = []
    for api in data.get("apis") or []:
        api = dict(api)
        api["name"] = renaming.api(api["name"])
        if isinstance(api.get("input_parameters"), dict):
            api["input_parameters"] = {renaming.parameter(k): v for k, v in api["input_parameters"].items()}
        apis.append(api)
    out["apis"] = apis
    dialogues = []
    for d in data.get("dialogues") or []:
        d = dict(d)
        for key in ("turns", "steps"):
            if isinstance(d.get(key), list):
                d[key] = [_renamed_turn(t, renaming, where) for t in d[key]]
        dialogues.append(d)
    out["dialogues"] = dialogues
    return out


def write_corpus_twin(src: str | Path, out: str | Path, *, seed: int = 0, change: Iterable[str] = CORPUS_CHANGES) -> dict[str, Any]:
    """Write the twin of the corpus folder ``src`` into ``out`` (see the module's docstring); returns the manifest.

    Raises:
        ConfigError: an output folder in use, a change a corpus does not take.
        DataError: a call in the corpus that does not parse (named, with its file).
    """
    src, out = Path(src), Path(out)
    if out.exists() and any(out.iterdir()):
        raise ConfigError(f"{out} is not empty: give a new folder for the twin")
    files = corpus_files(src)
    change = [c for c in CORPUS_CHANGES if c in set(change)] if set(change) <= set(CORPUS_CHANGES) else list(change)
    renaming, kept = corpus_renaming(*_names(files), seed, change)
    out.mkdir(parents=True, exist_ok=True)
    for path in files:
        data = _renamed_file(read_yaml(path), renaming, str(path))
        target = out / path.relative_to(src) if path.is_relative_to(src) else out / path.name
        target.parent.mkdir(parents=True, exist_ok=True)
        text = yaml.safe_dump(data, sort_keys=False, allow_unicode=True, width=120)
        target.write_text(f"# A twin of {path.name} (apibank twin, seed {seed}, {'+'.join(change)}): names replaced by synonyms.\n{text}", encoding="utf-8")
    manifest = {
        "source": src.name, "kind": "corpus", "seed": seed, "change": change, "renaming": renaming.to_dict(),
        "kept": sorted(kept), "files": len(files),
    }
    (out / TWIN_FILE).write_text(json.dumps(manifest, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    return manifest
