"""Twin benchmarks: the same tasks under new API and parameter names and new values, for measuring what a score
owes to recall.

``apibank twin --data SRC --out DIR --seed S --change names,parameters,values`` writes a complete benchmark in the
source's layout in which every API (``names``) and every parameter (``parameters``) has a new name that keeps its
meaning: each word of a name is replaced by one of its synonyms from ``data/twins/synonyms.yaml`` (written for this
project), the seed choosing among them. ``values`` gives the world other people, accounts, secrets and dates
(:mod:`apibank_lib.data.twin_values`): the data files are rewritten with them. The tools are not copied: the twin's ``twin.json`` holds the renaming, and
:func:`~apibank_lib.data.datasets.load_benchmark` serves the twin's tool sets through
:func:`~apibank_lib.env.renaming.renamed_toolset`. The benchmark's mechanism keeps its names (ToolSearcher,
GetUserToken, ``token``: :data:`~apibank_lib.env.renaming.KEPT_APIS`).

Every gold record is rewritten under the new names (:func:`write_twin`); :func:`apibank_lib.grading.twins.make_twin`
then checks the gold by execution and lists in ``twin.json`` every sample whose call does not execute to the
renamed form of its original result, with the reason.

Both layouts: ours, and an official release's (its rendered prompts are left out, since their text holds the old
names and values; its API descriptions, source files, are kept and shown under the new names).
"""

from __future__ import annotations

import hashlib
import json
import re
import shutil
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from apibank_lib.core.errors import ConfigError
from apibank_lib.core.paths import PROJECT_ROOT
from apibank_lib.core.yamlfile import read_yaml
from apibank_lib.data.twin_values import collect_values, rewrite_values
from apibank_lib.env.renaming import KEPT_APIS, KEPT_PARAMETERS, Renaming
from apibank_lib.env.tools.registry import toolset_for_level

__all__ = ["CHANGES", "TWIN_FILE", "TwinReport", "make_renaming", "new_names", "read_twin", "rename_stem", "synonyms_path", "twin_key",
           "write_manifest", "write_twin"]

CHANGES = ("names", "parameters", "values")
"""What a twin can change: API names, parameter names, and the values of the world (:mod:`~apibank_lib.data.twin_values`)."""

TWIN_FILE = "twin.json"
"""The file in a twin's root that makes it a twin: the source, the seed, the renaming, the exclusions."""

_DIALOGUE_DIRS = ("lv1-lv2-samples/level-1-given-desc", "lv1-lv2-samples/level-2-toolsearcher")
_LEVEL3_FILE = "test-data/level-3.json"  # both layouts keep it here (the releases this project reads do)


def synonyms_path() -> Path:
    """Where the synonym table lies."""
    return PROJECT_ROOT / "data" / "twins" / "synonyms.yaml"


def _camel_words(name: str) -> list[str]:
    return re.findall(r"[A-Z]+(?![a-z])|[A-Z][a-z0-9]*", name)


def _pick(options: list[str], seed: int, where: str) -> list[str]:
    """The options in the order the seed prefers for ``where`` (a hash, so one name's choice does not depend on
    which other names exist)."""
    start = int.from_bytes(hashlib.sha256(f"{seed}:{where}".encode()).digest()[:4], "big") % len(options)
    return options[start:] + options[:start]


def _new_name(name: str, words: list[str], table: Mapping[str, list[str]], seed: int, join: str, taken: set[str]) -> str | None:
    """The first name the seed prefers that differs from ``name`` and from every name ``taken``."""
    choices: list[list[str]] = [_pick(list(table.get(w) or [w]), seed, f"{name}/{i}") for i, w in enumerate(words)]
    # Walk the first alternative of every word, then vary one word at a time: a handful of candidates, in order.
    candidates = [[c[0] for c in choices]]
    for i, c in enumerate(choices):
        for alt in c[1:]:
            candidates.append([*(x[0] for x in choices[:i]), alt, *(x[0] for x in choices[i + 1 :])])
    for parts in candidates:
        new = join.join(parts)
        if new != name and new not in taken:
            return new
    return None


def make_renaming(seed: int, change: Iterable[str], *, synonyms: Mapping[str, Any] | None = None) -> Renaming:
    """New names for every API and parameter of both tool sets (but the kept ones), as ``change`` asks.

    Raises:
        ConfigError: an unknown change, or a name the synonym table cannot give a new form (named).
    """
    change = set(change)
    unknown = change - set(CHANGES)
    if unknown:
        raise ConfigError(f"--change {','.join(sorted(unknown))}: choose among {', '.join(CHANGES)}")
    table = synonyms if synonyms is not None else read_yaml(synonyms_path())
    names: set[str] = set()
    params: set[str] = set()
    for level in (1, 3):
        ts = toolset_for_level(level)
        names.update(ts)
        for n in ts:
            params.update(ts.get(n).input_parameters)
    apis, renamed_params, unnamed_apis, unnamed_params = new_names(
        names, params, seed, change, table.get("api_words", {}), table.get("parameter_words", {}), table.get("whole", {}),
    )
    if unnamed_apis:
        raise ConfigError(f"the synonym table gives API {unnamed_apis[0]} no new name: add its words to {synonyms_path()}")
    if unnamed_params:
        raise ConfigError(f"the synonym table gives parameter {unnamed_params[0]} no new name: add its words to {synonyms_path()}")
    return Renaming(apis, renamed_params)


def new_names(
    apis: set[str], params: set[str], seed: int, change: Iterable[str], api_words: Mapping[str, list[str]],
    parameter_words: Mapping[str, list[str]], whole: Mapping[str, str],
) -> tuple[dict[str, str], dict[str, str], list[str], list[str]]:
    """New API names (``names`` in ``change``) and parameter names (``parameters``), word by word from the tables,
    the benchmark's mechanism left as it is; a parameter takes its ``whole`` entry first where it has one.

    Returns:
        (API -> new name, parameter -> new name, the APIs and the parameters the tables give no new name, sorted).
    """
    change = set(change)
    new_apis: dict[str, str] = {}
    unnamed_apis: list[str] = []
    if "names" in change:
        taken = set(apis)
        for name in sorted(apis - KEPT_APIS):
            new = _new_name(name, _camel_words(name), api_words, seed, "", taken)
            if new is None:
                unnamed_apis.append(name)
                continue
            new_apis[name] = new
            taken.add(new)
    new_params: dict[str, str] = {}
    unnamed_params: list[str] = []
    if "parameters" in change:
        taken = set(params)
        for p in sorted(params - KEPT_PARAMETERS):
            new = whole.get(p) if whole.get(p) not in taken else None
            new = new or _new_name(p, p.split("_"), parameter_words, seed, "_", taken)
            if new is None or not new.isidentifier():
                unnamed_params.append(p)
                continue
            new_params[p] = new
            taken.add(new)
    return new_apis, new_params, unnamed_apis, unnamed_params


@dataclass
class TwinReport:
    """What :func:`make_twin` wrote.

    Attributes:
        out: the twin's root.
        renaming: the new names.
        files: data files rewritten.
        excluded: samples whose gold does not execute to the renamed original (``key`` and ``reason``).
        replay: the twin's gold replay under ``v2`` (levels -> correct / samples).
    """

    out: Path
    renaming: Renaming
    files: int = 0
    excluded: list[dict[str, Any]] = field(default_factory=list)
    replay: dict[str, Any] = field(default_factory=dict)
    manifest: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready."""
        values = self.renaming.values
        return {"out": str(self.out), "change": self.manifest.get("change", []), "files": self.files,
                "excluded": self.excluded, "replay": self.replay,
                "apis_renamed": len(self.renaming.apis), "parameters_renamed": len(self.renaming.parameters),
                "values_replaced": len(values.exact), "name_words_replaced": len(values.words),
                "date_shift_days": values.date_shift_days}


def _renamed_record(line: dict[str, Any], renaming: Renaming) -> dict[str, Any]:
    if line.get("role") != "API":
        return line
    out = dict(line)
    out["api_name"] = renaming.api(line["api_name"])
    out["param_dict"] = renaming.args(line.get("param_dict") or {})
    if isinstance(line.get("result"), dict):
        out["result"] = renaming.envelope(line["result"])
    return out


def rename_stem(stem: str, rename: Callable[[str], str]) -> str:
    """A dialogue file's stem (``A-B-level-1-1``: the APIs it calls, then its level and index) with each API name
    passed through ``rename`` (a renaming's ``api`` for the twin's stem, ``original_api`` for the source's)."""
    head, sep, tail = stem.partition("-level-")
    return "-".join(rename(n) for n in head.split("-")) + sep + tail if sep else stem


def _renamed_stem(stem: str, renaming: Renaming) -> str:
    return rename_stem(stem, renaming.api)


def twin_key(key: str, renaming: Renaming) -> str:
    """A source sample's key in its twin (the dialogue's file name carries the new API names)."""
    parts = key.split("/")
    if len(parts) == 4:  # a sample: L1/api/<dialogue>/<index>; an episode's key names a level-3 item, which keeps it
        parts[2] = _renamed_stem(parts[2], renaming)
    return "/".join(parts)


def _renamed_step(step: dict[str, Any], renaming: Renaming) -> dict[str, Any]:
    out = dict(step)
    out["api_name"] = renaming.api(step["api_name"])
    if isinstance(step.get("input"), dict):
        out["input"] = renaming.args(step["input"])
    if isinstance(step.get("output"), dict):
        out["output"] = renaming.envelope(step["output"])
    return out


def read_twin(root: str | Path) -> dict[str, Any] | None:
    """A twin's ``twin.json`` (None where the root is not a twin)."""
    path = Path(root) / TWIN_FILE
    return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else None


def write_twin(src: str | Path | None, out: str | Path, *, seed: int = 0, change: Iterable[str] = CHANGES) -> TwinReport:
    """Write the twin of a benchmark under new names, without checking its gold (see
    :func:`apibank_lib.grading.twins.make_twin`, which checks it by execution and lists what does not carry over).

    Args:
        src: the source root (None: the bundled benchmark).
        out: the twin's root (must not exist, or be empty).
        seed: which synonyms are chosen.
        change: ``names`` and/or ``parameters``.

    Raises:
        ConfigError: a twin of a twin, an output folder in use, an unknown change.
    """
    from apibank_lib.data.datasets import default_data_root, is_official_release
    from apibank_lib.data.formats.official import TEST_DATA_FILES

    src_root = Path(src) if src is not None else default_data_root()
    out = Path(out)
    if read_twin(src_root) is not None:
        raise ConfigError(f"{src_root} is a twin already: make twins of the source")
    if out.exists() and any(out.iterdir()):
        raise ConfigError(f"{out} is not empty: give a new folder for the twin")
    change = sorted(set(change), key=CHANGES.index) if set(change) <= set(CHANGES) else list(change)
    renaming = make_renaming(seed, change)
    if "values" in change:
        renaming = Renaming(renaming.apis, renaming.parameters, collect_values(src_root, seed))
    shutil.copytree(src_root, out, dirs_exist_ok=True)
    report = TwinReport(out, renaming)
    if "values" in change:
        report.files += rewrite_values(out, renaming.values)
    for folder in _DIALOGUE_DIRS:
        for path in sorted((out / folder).glob("*.jsonl")):
            lines = [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines() if x.strip()]
            text = "".join(json.dumps(_renamed_record(x, renaming), ensure_ascii=False) + "\n" for x in lines)
            path.unlink()
            (path.parent / f"{_renamed_stem(path.stem, renaming)}.jsonl").write_text(text, encoding="utf-8")
            report.files += 1
    level3 = out / _LEVEL3_FILE
    if level3.is_file():
        items = json.loads(level3.read_text(encoding="utf-8"))
        for item in items:
            item["apis"] = [_renamed_step(s, renaming) for s in item.get("apis", [])]
        level3.write_text(json.dumps(items, ensure_ascii=False, indent=2) + "\n", encoding="utf-8")
        report.files += 1
    left_out = []
    if is_official_release(out):
        # A release's rendered prompts hold the old names in their text: a twin renders its prompts itself. Its API
        # descriptions (apis/, lv3_apis/: source files) stay as they are: the loader shows them under the new names.
        for stem in TEST_DATA_FILES:
            for path in sorted(out.glob(f"*/{stem}.json")):
                path.unlink()
                left_out.append(str(path.relative_to(out)))
    resolved = src_root.resolve()
    report.manifest = {
        "source": str(resolved.relative_to(PROJECT_ROOT)) if resolved.is_relative_to(PROJECT_ROOT) else src_root.name,
        "seed": seed, "change": change, "renaming": renaming.to_dict(),
        "kept": {"apis": sorted(KEPT_APIS), "parameters": sorted(KEPT_PARAMETERS)}, "excluded": [],
        "left_out": left_out,
    }
    write_manifest(out, report.manifest)
    return report


def write_manifest(out: Path, manifest: Mapping[str, Any]) -> None:
    """Write a twin's ``twin.json`` (sorted keys: the same twin gives the same bytes)."""
    (Path(out) / TWIN_FILE).write_text(json.dumps(manifest, indent=1, sort_keys=True) + "\n", encoding="utf-8")
