"""Score a run folder: API-call accuracy and ROUGE-L per level, from the folder alone.

Nothing here queries a model: predictions are read from ``predictions.jsonl``,
the benchmark named in ``config.json`` is loaded (its fingerprint checked), and
each prediction is judged under the run's protocol.

* API-call samples: judged by :class:`~apibank_lib.protocols.Grader`; accuracy
  is correct / samples (duplicate samples included, as in the paper). A sample
  whose backend call failed counts as wrong.
* Response samples: ROUGE-L F of the ``rouge`` package (the original's metric:
  summary-level, sentences split on ``.``, case-sensitive, set-based). Levels
  1-2 round each score to 4 decimals; level 3 strips ``User:``/``AI:`` first.
  A text the package cannot score (empty, or only punctuation) scores 0 where
  the original crashed. Under ``v2`` a leading ``AI:`` is also stripped at
  levels 1-2.
* Level-3 episodes (agent loop): an episode succeeds when every gold
  non-search call was made with a result the gold API's rule accepts, and the
  end state equals the gold end state.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from apibank_lib.calls import parse_first_call
from apibank_lib.datasets import Benchmark, load_benchmark
from apibank_lib.errors import ConfigError, ParseError
from apibank_lib.protocols import Grader
from apibank_lib.runner import prediction_text, read_predictions
from apibank_lib.types import Level3Item, Sample

__all__ = ["rouge_l", "score_run", "judge_episode", "load_run"]


def rouge_l(hypothesis: str, reference: str) -> float:
    """ROUGE-L F1 with the ``rouge`` package's semantics; 0 when either text has no token."""
    from rouge import Rouge

    if not hypothesis or not hypothesis.strip() or not reference or not reference.strip():
        return 0.0
    try:
        return float(Rouge().get_scores(hypothesis, reference)[0]["rouge-l"]["f"])
    except ValueError:  # "Hypothesis is empty." for texts such as "..."
        return 0.0


def _response_score(text: str, reference: str, level: int, protocol: str) -> float:
    if level == 3:
        return rouge_l(text.replace("User:", "").replace("AI:", "").strip(), reference)
    if protocol == "v2":
        text = re.sub(r"^\s*AI:\s*", "", text)
    return round(rouge_l(text, reference), 4)


def judge_episode(item: Level3Item, record: dict[str, Any], grader: Grader) -> dict[str, Any]:
    """Judge one agent episode against its item's gold steps and gold end state."""
    gold_box = grader.new_sandbox(3)
    for st in item.steps:
        gold_box.execute_safely(st.call)
    box = grader.new_sandbox(3)
    executed: list[tuple[str, dict[str, Any]]] = []
    for st in record.get("steps") or []:
        if not st.get("call"):
            continue
        try:
            call = parse_first_call(st["call"])
        except ParseError:
            continue
        if call is not None:
            executed.append((call.name, box.execute_safely(call).to_dict()))
    required = [st for st in item.steps if st.api_name != "ToolSearcher"]
    used = [False] * len(executed)
    matched = 0
    for st in required:
        for i, (name, result) in enumerate(executed):
            if not used[i] and name == st.api_name and grader.check_result(box, st.api_name, result, st.output)[0]:
                used[i] = True
                matched += 1
                break
    same_state = box.fingerprint(outcome_only=True) == gold_box.fingerprint(outcome_only=True)
    return {
        "required_calls": len(required),
        "matched_calls": matched,
        "same_end_state": same_state,
        "calls_made": len(executed),
        "success": matched == len(required) and same_state,
    }


def load_run(run_dir: str | Path) -> tuple[dict[str, Any], dict[str, dict[str, Any]]]:
    """(config, last prediction per key) of a run folder."""
    run_dir = Path(run_dir)
    cfg_path = run_dir / "config.json"
    if not cfg_path.is_file():
        raise ConfigError(f"{run_dir} is not a run folder (no config.json)")
    return json.loads(cfg_path.read_text()), read_predictions(run_dir / "predictions.jsonl")


def score_run(run_dir: str | Path, *, bench: Benchmark | None = None, write: bool = True) -> dict[str, Any]:
    """Score a run folder under its own protocol; also writes ``metrics.json`` and ``judgments.jsonl``.

    Returns:
        ``{"model", "protocol", "levels": {"1": {...}}, "overall": {...}}``.
    """
    run_dir = Path(run_dir)
    cfg, preds = load_run(run_dir)
    protocol = cfg["identity"]["protocol"]
    bench = bench or load_benchmark(cfg["data"])
    if bench.fingerprint != cfg["identity"]["data_fingerprint"]:
        raise ConfigError(f"the data at {cfg['data']} changed since the run (fingerprint {bench.fingerprint} != {cfg['identity']['data_fingerprint']})")
    grader = Grader(bench, protocol)
    levels: dict[str, dict[str, Any]] = {}
    judgments: list[dict[str, Any]] = []
    for level in (1, 2, 3):
        api_n = api_ok = failed = 0
        rouge_sum, rouge_n = 0.0, 0
        for s in bench.samples(level):  # dataset order: the paper protocol's level-3 state depends on it
            rec = preds.get(s.key)
            if rec is None:
                continue
            text = prediction_text(rec) if not rec.get("error") else ""
            failed += bool(rec.get("error"))
            if s.kind == "api":
                j = grader.judge_api(s, text)
                api_n += 1
                api_ok += j.correct
                judgments.append({"key": s.key, "gold_api": _gold_api(s), **j.to_dict(), "backend_error": rec.get("error")})
            else:
                score = _response_score(text, str(s.gold.text), level, protocol)
                rouge_sum += score
                rouge_n += 1
                judgments.append({"key": s.key, "rouge_l": score, "backend_error": rec.get("error")})
        ep_n = ep_ok = 0
        if level == 3:
            for item in bench.level3:
                rec = preds.get(f"L3/episode/{item.id}")
                if rec is None:
                    continue
                res = judge_episode(item, rec, grader) if not rec.get("error") else {"success": False, "error": rec["error"]}
                ep_n += 1
                ep_ok += bool(res["success"])
                judgments.append({"key": f"L3/episode/{item.id}", **res})
        if api_n or rouge_n or ep_n:
            entry: dict[str, Any] = {
                "api_samples": api_n,
                "api_correct": api_ok,
                "api_accuracy": round(api_ok / api_n, 4) if api_n else None,
                "response_samples": rouge_n,
                "rouge_l": round(rouge_sum / rouge_n, 4) if rouge_n else None,
                "backend_errors": failed,
            }
            if ep_n:
                entry.update({"episodes": ep_n, "episodes_succeeded": ep_ok, "episode_success_rate": round(ep_ok / ep_n, 4)})
            levels[str(level)] = entry
    api_n = sum(v["api_samples"] for v in levels.values())
    api_ok = sum(v["api_correct"] for v in levels.values())
    r_n = sum(v["response_samples"] for v in levels.values())
    r_sum = sum((v["rouge_l"] or 0) * v["response_samples"] for v in levels.values())
    metrics = {
        "model": cfg["identity"]["model"],
        "protocol": protocol,
        "data_fingerprint": bench.fingerprint,
        "levels": levels,
        "overall": {
            "api_samples": api_n,
            "api_accuracy": round(api_ok / api_n, 4) if api_n else None,
            "response_samples": r_n,
            "rouge_l": round(r_sum / r_n, 4) if r_n else None,
            "note": "overall = micro average over all scored samples (the paper does not state how its Total is aggregated)",
        },
    }
    if write:
        (run_dir / "metrics.json").write_text(json.dumps(metrics, indent=2) + "\n")
        with (run_dir / "judgments.jsonl").open("w", encoding="utf-8") as f:
            for j in judgments:
                f.write(json.dumps(j, ensure_ascii=False, default=str) + "\n")
    return metrics


def _gold_api(sample: Sample) -> str:
    gold = sample.gold
    return str(getattr(gold, "api_name", ""))
