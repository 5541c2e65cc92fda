"""The synthesis pipeline: the five agents run in order over any backend, into a resumable folder.

``run_pipeline(SynthesisConfig(...))`` asks the model for domains, then APIs per
domain, then requests per domain, then one dialogue per request, and judges every
dialogue with the tester. The output folder holds:

* ``synthesis.json``: the folder's identity (the backend's answer-changing
  options and ``max_tokens``); a folder made with another identity is refused.
* ``domains.jsonl``, ``apis.jsonl``, ``requests.jsonl``, ``dialogues.jsonl``:
  one append-only JSON line per model answer (key, the prompt and its digest, the raw text,
  tokens, CPU and wall seconds, and the parser's verdict), flushed as it is written. A rerun reads
  them back and only asks for keys whose record is missing or whose prompt
  changed, so an interrupted run resumes, and a malformed answer never costs
  the answers before it. ``tester.jsonl`` records the tester's verdicts.
* ``corpus/<domain_slug>.yaml``: the accepted dialogues in our corpus format
  (rewritten on every run), which ``apibank check-train`` accepts.
* ``report.json``: the per-stage counts of the last run.

Keys are deterministic (``apis/<slug>``, ``requests/<slug>/<n>``,
``dialogues/<slug>/<n>``) and so is every choice the pipeline makes (the style
references and the ability of each request slot come from the seed), so a
concurrent run writes the same corpus as a serial one.

Model output is only read by the agents' parsers (``yaml.safe_load``), never
executed.
"""

from __future__ import annotations

import hashlib
import json
import random
import re
import threading
import time
from collections import Counter
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any, TypeVar

import yaml

from apibank_lib.core.errors import BackendError, ConfigError
from apibank_lib.core.types import Context, ToolSchema
from apibank_lib.data.check_train import check_corpus, evaluation_schemas, evaluation_texts, opening
from apibank_lib.data.formats.train_corpus import SEARCHER, CorpusDialogue
from apibank_lib.models.base import Backend, Request
from apibank_lib.models.registry import load_backend
from apibank_lib.prompting.modes import PAPER_PROMPT
from apibank_lib.prompting.prompts import Prompt
from apibank_lib.synthesis import schemas as stage_schemas
from apibank_lib.synthesis.agents import (
    API_LIMITS,
    DOMAIN_AREAS,
    FORMS,
    STAGES,
    RequestDraft,
    SynthesisParseError,
    answer_text,
    apis_prompt,
    dialogue_mapping,
    dialogue_prompt,
    domain_taken,
    domains_prompt,
    judge,
    parse_apis,
    parse_dialogue_output,
    parse_domains,
    parse_request,
    request_prompt,
    schema_entry,
    slugify,
)

__all__ = [
    "ABILITY_CYCLE",
    "RequestSlot",
    "StageCounts",
    "SynthesisConfig",
    "SynthesisDomain",
    "SynthesisRejection",
    "SynthesisReport",
    "SynthesisRun",
    "finish_run",
    "run_pipeline",
    "start_run",
]

ABILITY_CYCLE: tuple[str, ...] = ("call", "retrieve_call", "call", "retrieve_call", "plan_retrieve_call")
"""The abilities of a domain's request slots, repeated: 15 slots give the brief's 6 call, 6 retrieve_call and 3 plans."""

AREA_DOMAINS = 8
"""Domain names asked for in each further answer, one area of life at a time (:meth:`SynthesisRun.domains`)."""

FRUITLESS_AREAS = 3
"""Further domains answers in a row that name nothing new, after which the run goes on with the domains it has."""

_SHORT = {"call": "call", "retrieve_call": "retrieve", "plan_retrieve_call": "plan"}

# Synthesis prompts are not evaluation samples; a "response" context keeps
# backends from attaching native tool schemas to them.
_CONTEXT = Context(level=1, task="response", history=(), api_names=())

T = TypeVar("T")
R = TypeVar("R")


@dataclass
class SynthesisConfig:
    """Everything a synthesis run needs; validated on creation.

    Attributes:
        backend: a model spec (``openai:<model>@<base_url>``, ``llamacpp:gemma-3-270m`` ...) or a built backend.
        out: the output folder (created; reused to resume).
        n_domains: how many domains to ask for.
        apis_per_domain: how many APIs to ask for per domain (extra ones are dropped).
        dialogues_per_domain: request slots per domain; each accepted request gets one dialogue.
        concurrency: parallel requests, where the backend allows it (``backend.concurrent``).
        seed: picks the style references and where each domain's ability cycle starts.
        max_tokens: the generation budget of every answer.
        backend_options: options for a backend built from a spec.
        evaluation_names, evaluation_requests: what the corpus must stay apart from
            (default: the bundled evaluation benchmark's API names and requests; with the default names, no API
            may be an evaluation API under another name either, :func:`~apibank_lib.data.check_train.near_evaluation`).
        form: how the agents answer (:data:`~apibank_lib.synthesis.agents.FORMS`): ``json``, constrained by each
            stage's JSON Schema (:mod:`apibank_lib.synthesis.schemas`), or ``yaml`` in a fenced block. None: ``json``
            where the backend constrains output (llama.cpp, an OpenAI-compatible server), else ``yaml``.
        temperature: sampling temperature of every answer (0: greedy). A small model decoding greedily repeats
            itself (the same API three times in one list); each answer is sampled with a seed drawn from
            ``seed`` and its key, so a rerun gives the same answers.
        domains_asked: how many domains the domains agent is asked for in its first answer (None:
            ``n_domains``); further answers, one area of life at a time, top the new ones up to ``n_domains``.
            Fixing it lets a long generation grow by domains: a later run with a larger ``n_domains`` reuses the
            answers it has and asks only for more.
        lists: show the agents what to keep away from: the domains agent the evaluated areas, the taken domains
            and two example domains; the APIs agent two evaluation APIs as layout references; the request agent
            the requests already written for the domain; the dialogue agent a worked example from another domain
            (Qwen2.5-Coder-1.5B wrote boat-rental APIs for most domains after a rule's example name, and copied
            the example dialogue's values). A capable
            model avoids them; a small one copies them (Qwen2.5-Coder-1.5B's domains began with the examples and
            went on through the list; it wrote one request three times), so the embedded models run without
            them: the pipeline drops taken domains itself, and the rotating focus API and deduplication keep the
            requests apart.
        retries: how many times an answer the parser refuses is asked again (with another sampling seed; only
            when sampling). Every try is counted and kept in the journal.
        apart_from: corpus files or folders the new corpus must stay apart from as from the evaluation: their
            API names are refused, their requests count as duplicates, and their domains are named to the
            domains agent as taken (e.g. ``data/train/corpus``, for a corpus of new APIs).
        clarify: in the JSON form, let a dialogue open with the assistant's question and the user's answer
            before the calls. Qwen2.5-Coder-1.5B wrote the calls as text into that question (6 of 10 accepted
            dialogues of its first pass), so the embedded models run with ``clarify=False``: the request gives
            every value, and the dialogue calls at once.
        request_values: the request agent first gives a value for each required input of the APIs it chose (but
            those an earlier API's output supplies), then a request that says each one (the parser checks both),
            and in the JSON form the dialogue's calls take exactly those values. In the first reviewed pass of
            Qwen2.5-Coder-1.5B, 22 of 39 unusable dialogues had a request without the values its calls needed,
            which the dialogue agent then invented.
        feedback: a retry's prompt ends with the parser's reason for refusing the try before (in chat mode; a
            completion model is just sampled again). Small models often write a request that leaves out a value
            they listed; told which, they can mend it.
    """

    backend: str | Backend
    out: str | Path
    n_domains: int = 10
    apis_per_domain: int = 6
    dialogues_per_domain: int = 15
    concurrency: int = 1
    seed: int = 0
    max_tokens: int = 1536
    backend_options: dict[str, Any] = field(default_factory=dict)
    evaluation_names: Sequence[str] | None = None
    evaluation_requests: Sequence[str] | None = None
    form: str | None = None
    temperature: float = 0.7
    domains_asked: int | None = None
    lists: bool = True
    retries: int = 0
    apart_from: Sequence[str | Path] = ()
    clarify: bool = True
    request_values: bool = False
    feedback: bool = False

    def __post_init__(self) -> None:
        if not isinstance(self.retries, int) or isinstance(self.retries, bool) or self.retries < 0:
            raise ConfigError(f"synthesis retries must be a whole number of at least 0, not {self.retries!r}")
        if not isinstance(self.temperature, (int, float)) or not 0 <= self.temperature <= 2:
            raise ConfigError(f"synthesis temperature must be between 0 and 2, not {self.temperature!r}")
        if self.form is not None and self.form not in FORMS:
            raise ConfigError(f"synthesis form must be one of {', '.join(FORMS)}, not {self.form!r}")
        for name in ("n_domains", "apis_per_domain", "dialogues_per_domain", "concurrency", "max_tokens"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ConfigError(f"synthesis setting {name} must be a positive whole number, not {value!r}")
        if not isinstance(self.backend, (str, Backend)):
            raise ConfigError(f"synthesis backend must be a model spec or a Backend, not {type(self.backend).__name__}")
        if isinstance(self.backend, Backend) and self.backend_options:
            raise ConfigError("backend_options apply to a backend built from a spec, not to a given Backend")
        self.out = Path(self.out)


@dataclass
class StageCounts:
    """One stage's tally.

    Attributes:
        attempted: answers obtained (model stages) or dialogues judged (tester).
        accepted: answers the parser read (tester: dialogues accepted).
        items: what accepted answers yield after deduplication (domains, APIs, requests, dialogues).
        duplicates: items dropped as repeats (an API name already defined, a request already written).
        calls: backend calls made by this run (0 for work read back from the journal).
        resumed: answers read back from the journal instead of asking the model.
        prompt_tokens, completion_tokens: token cost of the answers used, as the backend reported it.
        cpu_seconds: CPU time of this process while the answers used were generated (an in-process model's
            cost; near zero for a remote server), as recorded when each was made.
        wall_seconds: wall time of the same requests.
        reasons: rejected answers by reason (a parse kind, a tester reason, or ``backend``).
    """

    attempted: int = 0
    accepted: int = 0
    items: int = 0
    duplicates: int = 0
    calls: int = 0
    resumed: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cpu_seconds: float = 0.0
    wall_seconds: float = 0.0
    reasons: Counter[str] = field(default_factory=Counter)

    @property
    def rejected(self) -> int:
        """Answers (tester: dialogues) rejected."""
        return sum(self.reasons.values())


@dataclass(frozen=True)
class SynthesisRejection:
    """Why one answer or dialogue was not used: its stage, key, reason and message."""

    stage: str
    key: str
    reason: str
    message: str

    def __str__(self) -> str:
        return f"{self.stage} {self.key}: {self.reason}: {self.message}"


@dataclass
class SynthesisReport:
    """What a synthesis run produced: per-stage counts, every rejection, and the corpus files."""

    out: Path
    stages: dict[str, StageCounts]
    rejections: list[SynthesisRejection] = field(default_factory=list)
    corpus_files: list[Path] = field(default_factory=list)
    accepted: list[CorpusDialogue] = field(default_factory=list)

    def counts(self) -> dict[str, Any]:
        """Plain counts: the corpus files, accepted dialogues, and each stage's tally (reasons as a dict)."""
        stages = {}
        for name, c in self.stages.items():
            row = {k: v for k, v in asdict(c).items() if k != "reasons"}
            row["rejected"] = c.rejected
            row["rejected_by_reason"] = dict(sorted(c.reasons.items()))
            stages[name] = row
        return {
            "out": str(self.out),
            "corpus_files": [str(p) for p in self.corpus_files],
            "dialogues_accepted": len(self.accepted),
            "stages": stages,
        }

    def table(self) -> Any:
        """One row per stage: attempted, accepted, rejected (and why), items, duplicates, calls, resumed, tokens."""
        import pandas as pd

        rows = []
        for name, c in self.stages.items():
            rows.append(
                {
                    "stage": name,
                    "attempted": c.attempted,
                    "accepted": c.accepted,
                    "rejected": c.rejected,
                    "rejected_by_reason": ", ".join(f"{r}: {n}" for r, n in sorted(c.reasons.items())),
                    "items": c.items,
                    "duplicates": c.duplicates,
                    "calls": c.calls,
                    "resumed": c.resumed,
                    "prompt_tokens": c.prompt_tokens,
                    "completion_tokens": c.completion_tokens,
                    "cpu_seconds": round(c.cpu_seconds, 1),
                    "wall_seconds": round(c.wall_seconds, 1),
                }
            )
        return pd.DataFrame(rows)

    def rejections_table(self) -> Any:
        """Every rejection as a row (stage, key, reason, message)."""
        import pandas as pd

        return pd.DataFrame([asdict(r) for r in self.rejections], columns=["stage", "key", "reason", "message"])


# --- the journal -----------------------------------------------------------------------------------


class _Journal:
    """One stage's append-only JSONL file: the latest record per key."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.records: dict[str, dict[str, Any]] = {}
        self._lock = threading.Lock()
        if not path.is_file():
            return
        raw = path.read_bytes()
        if raw and not raw.endswith(b"\n"):
            # A crash cut the last line; drop it so the next append starts on a fresh line.
            cut = raw.rfind(b"\n") + 1
            with path.open("r+b") as f:
                f.truncate(cut)
            raw = raw[:cut]
        for line in raw.decode("utf-8", errors="replace").splitlines():
            try:
                rec = json.loads(line)
            except json.JSONDecodeError:
                continue  # a broken line is work to redo, not a reason to stop
            if isinstance(rec, dict) and isinstance(rec.get("key"), str):
                self.records[rec["key"]] = rec

    def get(self, key: str, digest: str) -> dict[str, Any] | None:
        """The record of ``key`` if it answered the same prompt."""
        rec = self.records.get(key)
        return rec if rec is not None and rec.get("digest") == digest else None

    def append(self, rec: dict[str, Any]) -> None:
        """Write one record and flush it at once."""
        line = json.dumps(rec, ensure_ascii=False, default=str) + "\n"
        with self._lock:
            with self.path.open("a", encoding="utf-8") as f:
                f.write(line)
            self.records[rec["key"]] = rec


def with_feedback(prompt: Prompt, error: SynthesisParseError) -> Prompt:
    """``prompt`` with a note on why an earlier answer was refused, at the end of its last user turn: the prompt
    of a retry with feedback. The refused answer itself is not shown: shown as the assistant's turn,
    Qwen2.5-Coder-1.5B copied it word for word. Only the chat messages change; a completion prompt stays."""
    reason = str(error).split(": ", 2)[-1]  # the parser's reason, without its "<stage> stage: <kind>:" head
    note = f"\n\nAn earlier answer to this was refused: {reason}. Write an answer without that mistake."
    messages = [dict(m) for m in prompt.messages]
    last = max(i for i, m in enumerate(messages) if m["role"] == "user")
    messages[last]["content"] += note
    return replace(prompt, messages=messages)


def _digest(payload: Any) -> str:
    return hashlib.sha256(
        json.dumps(payload, sort_keys=True, ensure_ascii=False, default=str).encode("utf-8")
    ).hexdigest()[:16]


# --- one run ---------------------------------------------------------------------------------------


@dataclass
class _Outcome:
    """One model answer and what its parser made of it."""

    key: str
    value: Any = None
    error: SynthesisParseError | BackendError | None = None
    resumed: bool = False
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cpu_s: float = 0.0
    wall_s: float = 0.0


@dataclass(frozen=True)
class SynthesisDomain:
    """A domain the pipeline writes for: its name and the slug its ids and file names use."""

    name: str
    slug: str


@dataclass
class RequestSlot:
    """A request slot that produced a usable request."""

    domain: SynthesisDomain
    number: int
    dialogue_id: str
    draft: RequestDraft


class SynthesisRun:
    """The state of one synthesis run (the pipeline's or the single agent's): backend, journals, counts and
    rejections."""

    def __init__(
        self,
        config: SynthesisConfig,
        backend: Backend,
        eval_names: list[str],
        eval_requests: list[str],
        stages: Sequence[str] = STAGES,
        eval_schemas: Sequence[ToolSchema] = (),
    ) -> None:
        self.config = config
        self.out = Path(config.out)
        self.backend = backend
        self.eval_names = eval_names
        self.eval_requests = eval_requests
        self.eval_schemas = list(eval_schemas)
        completion = backend.prompt_mode() == "completion"
        # A completion model continues the prompt's opened fence: it writes the block's body,
        # and a closing fence ends it.
        self.completion = completion
        self.stop = ["```"] if completion else None
        self.form = answer_form(config, backend)
        self.workers = config.concurrency if backend.concurrent else 1
        self.taken_domains: list[str] = []
        self._tally_lock = threading.Lock()
        self.journals = {stage: _Journal(self.out / f"{stage}.jsonl") for stage in stages}
        self.stages = {stage: StageCounts() for stage in stages}
        self.rejections: list[SynthesisRejection] = []

    # -- helpers --

    def map(self, fn: Callable[[T], R], items: Sequence[T]) -> list[R]:
        """``fn`` over ``items`` in order, on the thread pool where the backend allows it."""
        if self.workers == 1 or len(items) < 2:
            return [fn(x) for x in items]
        with ThreadPoolExecutor(max_workers=self.workers) as pool:
            futures = [pool.submit(fn, x) for x in items]
            try:
                return [f.result() for f in futures]
            except BaseException:
                for f in futures:
                    f.cancel()
                raise

    def attempt(
        self, stage: str, key: str, prompt: Prompt, parse: Callable[[str], Any], schema: dict[str, Any] | None = None
    ) -> _Outcome:
        """Get the answer for ``key`` (from the journal, or the model) and parse it; an answer the parser refuses
        is asked again, up to ``config.retries`` times, under the keys ``<key>#2``, ``<key>#3`` ... (another
        sampling seed). Each refused try is counted in the stage and recorded; the last try is returned for the
        caller to count.

        ``schema`` constrains the answer in the JSON form (ignored in the YAML form).

        Raises:
            BackendError: the server cannot be reached at all (nothing else can succeed either).
        """
        outcome = self._attempt_once(stage, key, prompt, parse, schema)
        tries = 1
        while isinstance(outcome.error, SynthesisParseError) and tries <= self.config.retries and self.config.temperature:
            self.tally(stage, outcome)
            tries += 1
            if self.config.feedback and not self.completion:
                prompt = with_feedback(prompt, outcome.error)
            outcome = self._attempt_once(stage, f"{key}#{tries}", prompt, parse, schema)
        return outcome

    def _attempt_once(
        self, stage: str, key: str, prompt: Prompt, parse: Callable[[str], Any], schema: dict[str, Any] | None
    ) -> _Outcome:
        lead = prompt.lead if self.completion else ""
        schema = schema if self.form == "json" else None
        payload = {"messages": prompt.messages, "text": prompt.text, "lead": lead, "max_tokens": self.config.max_tokens}
        sample_seed = None
        if self.config.temperature:
            sample_seed = int(_digest([self.config.seed, key])[:8], 16)
            payload["sampling"] = [self.config.temperature, sample_seed]  # absent when greedy: older journals stay valid
        if schema is not None:
            payload["schema"] = schema  # a digest without it keeps the YAML form's journals valid
        digest = _digest(payload)
        journal = self.journals[stage]
        rec = journal.get(key, digest)
        if rec is not None:
            outcome = _Outcome(
                key,
                resumed=True,
                prompt_tokens=rec.get("prompt_tokens") or 0,
                completion_tokens=rec.get("completion_tokens") or 0,
                cpu_s=rec.get("cpu_s") or 0.0,
                wall_s=rec.get("wall_s") or 0.0,
            )
            text = rec["text"]
        else:
            # The agents' prompts are instructions in text: a chat model gets them as messages, without tools.
            mode = "completion" if self.completion else PAPER_PROMPT
            request = Request(
                prompt, _CONTEXT, max_tokens=self.config.max_tokens, stop=self.stop, prompt_mode=mode,
                response_schema=schema, temperature=self.config.temperature or None, seed=sample_seed,
            )
            cpu, wall = time.process_time(), time.perf_counter()
            try:
                completion = self.backend.complete(request)
            except BackendError as exc:
                if exc.connection:
                    raise
                # Not journaled: a failed request is retried by the next run.
                return _Outcome(key, error=exc)
            text = completion.text
            outcome = _Outcome(
                key,
                prompt_tokens=completion.prompt_tokens or 0,
                completion_tokens=completion.completion_tokens or 0,
                cpu_s=round(time.process_time() - cpu, 3),
                wall_s=round(time.perf_counter() - wall, 3),
            )
        try:
            outcome.value = parse(answer_text(text, lead))
        except SynthesisParseError as exc:
            outcome.error = exc
        if rec is None:
            journal.append(
                {
                    "key": key,
                    "digest": digest,
                    "stage": stage,
                    # The prompt as sent, so that a rejection can be audited from the journal alone.
                    "prompt": prompt.text if self.completion else prompt.messages,
                    "lead": lead,
                    "text": text,
                    "prompt_tokens": outcome.prompt_tokens,
                    "completion_tokens": outcome.completion_tokens,
                    "cpu_s": outcome.cpu_s,
                    "wall_s": outcome.wall_s,
                    "schema": schema is not None,
                    "ok": outcome.error is None,
                    "error": {"kind": outcome.error.kind, "message": str(outcome.error)}
                    if isinstance(outcome.error, SynthesisParseError)
                    else None,
                }
            )
        return outcome

    def tally(self, stage: str, outcome: _Outcome) -> bool:
        """Count an answer in its stage; record its rejection. True when it was accepted."""
        with self._tally_lock:  # retries are counted from the worker threads
            return self._tally(stage, outcome)

    def _tally(self, stage: str, outcome: _Outcome) -> bool:
        c = self.stages[stage]
        c.attempted += 1
        c.prompt_tokens += outcome.prompt_tokens
        c.completion_tokens += outcome.completion_tokens
        c.cpu_seconds += outcome.cpu_s
        c.wall_seconds += outcome.wall_s
        if outcome.resumed:
            c.resumed += 1
        else:
            c.calls += 1
        if outcome.error is None:
            c.accepted += 1
            return True
        if isinstance(outcome.error, SynthesisParseError):
            reason, message = outcome.error.kind, outcome.error.reason
        else:
            reason, message = "backend", str(outcome.error)
        c.reasons[reason] += 1
        self.rejections.append(SynthesisRejection(stage, outcome.key, reason, message))
        return False

    def ability(self, domain: SynthesisDomain, number: int) -> str:
        start = random.Random(f"{self.config.seed}:{domain.slug}:abilities").randrange(len(ABILITY_CYCLE))
        return ABILITY_CYCLE[(start + number - 1) % len(ABILITY_CYCLE)]

    def references(self, domain: SynthesisDomain) -> list[ToolSchema]:
        from apibank_lib.env.tools.registry import toolset_for_level

        tools = toolset_for_level(1)
        names = sorted(n for n in tools if n != SEARCHER)
        picked = random.Random(f"{self.config.seed}:{domain.slug}:references").sample(names, 2)
        return [tools.schema(n) for n in picked]

    # -- stages --

    def domains(self) -> list[SynthesisDomain]:
        """The first ``n_domains`` new domain names: from one answer for ``domains_asked`` names, then, while
        that gives too few (a small model repeats names), from one answer per area of :data:`DOMAIN_AREAS` in
        turn, each for :data:`AREA_DOMAINS` names."""
        n = self.config.domains_asked or self.config.n_domains
        asks = [("domains", n, None)] + [(f"domains/{slugify(a)}", AREA_DOMAINS, a) for a in DOMAIN_AREAS]
        names: list[str] = []
        fruitless = 0
        for key, count, area in asks:
            if len(names) >= self.config.n_domains or fruitless == FRUITLESS_AREAS:
                break
            prompt = domains_prompt(count, self.form, self.taken_domains, lists=self.config.lists, area=area)
            outcome = self.attempt("domains", key, prompt, parse_domains, stage_schemas.domains_schema(count))
            before = len(names)
            if self.tally("domains", outcome):
                self._new_domains(key, outcome.value, names)
            fruitless = fruitless + 1 if len(names) == before else 0
        names = names[: self.config.n_domains]
        self.stages["domains"].items = len(names)
        return [SynthesisDomain(n, slugify(n)) for n in names]

    def _new_domains(self, key: str, answered: list[str], names: list[str]) -> None:
        """Append to ``names`` the answered domains that are new; count and record the others."""
        for name in answered:
            why = domain_taken(name, [*self.taken_domains, *names])
            if why is not None:
                self.stages["domains"].duplicates += 1
                self.rejections.append(SynthesisRejection("domains", key, "taken", why))
                continue
            names.append(name)

    def apis(self, domains: list[SynthesisDomain]) -> dict[SynthesisDomain, list[ToolSchema]]:
        def one(domain: SynthesisDomain) -> _Outcome:
            n = self.config.apis_per_domain
            prompt = apis_prompt(domain.name, n, self.references(domain) if self.config.lists else [], self.form)
            return self.attempt(
                "apis", f"apis/{domain.slug}", prompt, lambda t: parse_apis(t, evaluation_names=self.eval_names, evaluation=self.eval_schemas),
                stage_schemas.apis_schema(n),
            )

        out: dict[SynthesisDomain, list[ToolSchema]] = {}
        defined: dict[str, str] = {}
        c = self.stages["apis"]
        for domain, outcome in zip(domains, self.map(one, domains)):
            if not self.tally("apis", outcome):
                continue
            kept = []
            for schema in outcome.value[: self.config.apis_per_domain]:
                if schema.name in defined:
                    # API names are unique across the corpus; the first domain keeps it.
                    c.duplicates += 1
                    continue
                defined[schema.name] = domain.slug
                kept.append(schema)
            c.items += len(kept)
            if kept:
                out[domain] = kept
        return out

    def requests(self, apis: dict[SynthesisDomain, list[ToolSchema]]) -> list[RequestSlot]:
        def chain(domain: SynthesisDomain) -> list[tuple[int, _Outcome]]:
            # Within a domain the slots run in turn: each prompt lists the requests already written.
            schemas = {s.name: s for s in apis[domain]}
            earlier: list[str] = []
            done = []
            for number in range(1, self.config.dialogues_per_domain + 1):
                ability = self.ability(domain, number)
                focus = apis[domain][(number - 1) % len(apis[domain])].name
                shown = earlier if self.config.lists else []
                prompt = request_prompt(
                    domain.name, apis[domain], ability, shown, self.form, focus, values=self.config.request_values
                )
                low, high = API_LIMITS[ability]
                outcome = self.attempt(
                    "requests",
                    f"requests/{domain.slug}/{number}",
                    prompt,
                    lambda t, a=ability: parse_request(t, schemas, ability=a, values=self.config.request_values),
                    stage_schemas.request_schema(
                        ability, list(schemas), min(low, len(schemas)), min(high, len(schemas)),
                        values=self.config.request_values,
                    ),
                )
                if outcome.error is None and _norm(outcome.value.request) not in {_norm(e) for e in earlier}:
                    earlier.append(outcome.value.request)
                done.append((number, outcome))
            return done

        domains = list(apis)
        slots: list[RequestSlot] = []
        seen: set[str] = set()
        c = self.stages["requests"]
        for domain, done in zip(domains, self.map(chain, domains)):
            per_ability: Counter[str] = Counter()
            for number, outcome in done:
                ability = self.ability(domain, number)
                per_ability[ability] += 1
                if not self.tally("requests", outcome):
                    continue
                text = _norm(outcome.value.request)
                if text in seen:
                    c.duplicates += 1
                    continue
                seen.add(text)
                c.items += 1
                # The id is unique within this folder only. A generation written into another folder with the
                # same seed and domains numbers its slots the same way, and once the folders are pooled (as
                # training pools data/train/synthesized/*) check_corpus keeps the first dialogue of an id and
                # refuses the other as a duplicate: values/ reused multi-agent/'s domains and APIs, and 8 of its
                # ids were renamed once, by a script, with a "v" suffix (values/ corpus, tester.jsonl, review.csv). A rerun
                # of values/ writes the plain ids again; tests/test_committed_corpora.py, which judges every
                # committed corpus together, then fails.
                slots.append(
                    RequestSlot(domain, number, f"{domain.slug}-{_SHORT[ability]}-{per_ability[ability]}", outcome.value)
                )
        return slots

    def dialogues(
        self, slots: list[RequestSlot], apis: dict[SynthesisDomain, list[ToolSchema]]
    ) -> list[tuple[RequestSlot, CorpusDialogue]]:
        def one(slot: RequestSlot) -> _Outcome:
            by_name = {s.name: s for s in apis[slot.domain]}
            chosen = [by_name[a] for a in slot.draft.apis]
            prompt = dialogue_prompt(
                slot.domain.name, chosen, slot.draft, self.form, example=self.config.lists, clarify=self.config.clarify
            )
            path = str(self.out / "corpus" / f"{slot.domain.slug}.yaml")
            return self.attempt(
                "dialogues",
                f"dialogues/{slot.domain.slug}/{slot.number}",
                prompt,
                lambda t: parse_dialogue_output(
                    t,
                    slot.draft,
                    dialogue_id=slot.dialogue_id,
                    domain=slot.domain.name,
                    path=path,
                    index=slot.number - 1,
                ),
                stage_schemas.dialogue_schema(
                    slot.draft.ability, chosen, slot.draft.request, clarify=self.config.clarify,
                    values=dict(slot.draft.values),
                ),
            )

        out = []
        for slot, outcome in zip(slots, self.map(one, slots)):
            if self.tally("dialogues", outcome):
                self.stages["dialogues"].items += 1
                out.append((slot, outcome.value))
        return out

    def tester(
        self, drafted: list[tuple[RequestSlot, CorpusDialogue]], apis: dict[SynthesisDomain, list[ToolSchema]]
    ) -> list[tuple[RequestSlot, CorpusDialogue]]:
        c = self.stages["tester"]
        accepted = []
        for slot, d in drafted:
            key = _tester_key(slot)
            verdict = judge(d, {s.name: s for s in apis[slot.domain]})
            c.attempted += 1
            if verdict is not None:
                self.record_verdict(key, d, verdict)
                c.reasons[verdict[0]] += 1
                self.rejections.append(SynthesisRejection("tester", key, *verdict))
                continue
            accepted.append((slot, d))  # journaled by write, once the corpus as a whole is judged
        return accepted

    def record_verdict(self, key: str, d: CorpusDialogue, verdict: tuple[str, str] | None) -> None:
        """Journal the tester's verdict on ``d`` unless the journal's latest record for ``key`` already says it: a
        rerun under a changed tester records the new verdict (the latest record of a key is the one that counts)."""
        journal = self.journals["tester"]
        digest = _digest(dialogue_mapping(d))
        reason, message = verdict if verdict is not None else (None, None)
        rec = journal.get(key, digest)
        if rec is not None and (rec.get("ok"), rec.get("reason"), rec.get("message")) == (verdict is None, reason, message):
            return
        journal.append({"key": key, "digest": digest, "id": d.id, "ok": verdict is None, "reason": reason, "message": message})

    def write(
        self, accepted: list[tuple[RequestSlot, CorpusDialogue]], apis: dict[SynthesisDomain, list[ToolSchema]]
    ) -> tuple[list[Path], list[tuple[RequestSlot, CorpusDialogue]]]:
        """Write the corpus files, judge them as a whole (duplicates) and rewrite them without what it rejects."""
        folder = self.out / "corpus"
        folder.mkdir(parents=True, exist_ok=True)
        paths = self._write_files(folder, accepted, apis)
        report = check_corpus(
            paths, evaluation_names=self.eval_names, evaluation_requests=self.eval_requests, evaluation=self.eval_schemas
        )
        # Ids are unique by construction (the domain's slug, the ability, a number), so they identify a rejection.
        refused = {r.dialogue_id: r for r in report.rejected}
        for slot, d in accepted:
            r = refused.get(d.id)
            self.record_verdict(_tester_key(slot), d, None if r is None else (r.reason, r.message))
        if refused or report.api_rejections:
            c = self.stages["tester"]
            kept = []
            for slot, d in accepted:
                r = refused.get(d.id)
                if r is None:
                    kept.append((slot, d))
                    continue
                c.reasons[r.reason] += 1
                self.rejections.append(SynthesisRejection("tester", _tester_key(slot), r.reason, r.message))
            for r in report.api_rejections:
                # Cannot happen after the APIs stage's checks; kept visible rather than silent.
                self.rejections.append(SynthesisRejection("tester", f"apis/{Path(r.where).stem}", r.reason, r.message))
            accepted = kept
            paths = self._write_files(folder, accepted, apis)
        self.stages["tester"].accepted = self.stages["tester"].items = len(accepted)
        return paths, accepted

    def _write_files(
        self, folder: Path, accepted: list[tuple[RequestSlot, CorpusDialogue]], apis: dict[SynthesisDomain, list[ToolSchema]]
    ) -> list[Path]:
        by_domain: dict[SynthesisDomain, list[CorpusDialogue]] = {}
        for slot, d in accepted:
            by_domain.setdefault(slot.domain, []).append(d)
        paths = []
        for domain, dialogues in by_domain.items():
            data = {
                "domain": domain.name,
                "apis": [schema_entry(s) for s in apis[domain]],
                "dialogues": [dialogue_mapping(d) for d in dialogues],
            }
            path = folder / f"{domain.slug}.yaml"
            text = yaml.safe_dump(data, sort_keys=False, default_flow_style=None, width=1000, allow_unicode=True)
            path.write_text(text, encoding="utf-8")
            paths.append(path)
        # The folder is this run's output: files of domains it no longer produces would clash with it.
        for stale in set(folder.glob("*.yaml")) - set(paths):
            stale.unlink()
        return paths


def _norm(text: str) -> str:
    return " ".join(re.findall(r"[a-z0-9]+", text.lower()))


def _tester_key(slot: RequestSlot) -> str:
    """The tester journal's key of a request slot's dialogue."""
    return f"tester/{slot.domain.slug}/{slot.number}"


def _check_identity(out: Path, identity: dict[str, Any]) -> None:
    path = out / "synthesis.json"
    if path.is_file():
        try:
            before = json.loads(path.read_text(encoding="utf-8"))
        except json.JSONDecodeError as exc:
            raise ConfigError(f"{path}: not a synthesis identity file ({exc})") from exc
        differ = sorted(k for k in set(before) | set(identity) if before.get(k) != identity.get(k))
        if differ:
            raise ConfigError(
                f"{out} holds a synthesis made with other settings ({', '.join(differ)} differ); choose another --out"
            )
        return
    path.write_text(json.dumps(identity, indent=2, sort_keys=True, default=str) + "\n", encoding="utf-8")


def answer_form(config: SynthesisConfig, backend: Backend) -> str:
    """The agents' answer form: the config's, else ``json`` where the backend constrains output, else ``yaml``."""
    return config.form or ("json" if backend.constrains_json else "yaml")


def start_run(config: SynthesisConfig, method: str = "multi-agent", stages: Sequence[str] = STAGES) -> SynthesisRun:
    """The backend built, the folder's identity checked (``method`` is part of it, so the single agent and the
    pipeline never share a folder), and the evaluation texts the corpus must stay apart from."""
    backend = (
        config.backend
        if isinstance(config.backend, Backend)
        else load_backend(config.backend, **config.backend_options)
    )
    if backend.prompt_mode() == "reference":
        raise ConfigError(
            f"the {backend.kind} backend reads reference answers; synthesis needs a model that writes text"
        )
    out = Path(config.out)
    out.mkdir(parents=True, exist_ok=True)
    form = answer_form(config, backend)
    identity: dict[str, Any] = {"backend": backend.identity(), "max_tokens": config.max_tokens}
    if config.temperature:
        identity["temperature"] = config.temperature  # absent when greedy, as folders made before sampling
    if form != "yaml":
        identity["form"] = form  # absent for YAML, so folders made before forms existed keep their identity
    if method != "multi-agent":
        identity["method"] = method
    if config.apart_from:
        identity["apart_from"] = sorted(str(Path(p)) for p in config.apart_from)
    _check_identity(out, identity)
    names, requests = (config.evaluation_names, config.evaluation_requests)
    eval_schemas = evaluation_schemas() if names is None else []
    if names is None or requests is None:
        bench_names, bench_requests = evaluation_texts()
        names = bench_names if names is None else names
        requests = bench_requests if requests is None else requests
    names, requests, taken = list(names), list(requests), []
    if config.apart_from:
        report = check_corpus(list(config.apart_from), evaluation_names=[], evaluation_requests=[])
        names += sorted(report.schemas)
        requests += [opening(d) for d in report.accepted]
        taken = sorted({f.domain for f in report.files})
    run = SynthesisRun(config, backend, names, requests, stages, eval_schemas)
    run.taken_domains = taken
    return run


def finish_run(run: SynthesisRun, accepted: list[tuple[RequestSlot, CorpusDialogue]], apis: dict[SynthesisDomain, list[ToolSchema]]) -> SynthesisReport:
    """Write the corpus and ``report.json``; the run's report."""
    paths, accepted = run.write(accepted, apis)
    report = SynthesisReport(run.out, run.stages, run.rejections, paths, [d for _, d in accepted])
    (run.out / "report.json").write_text(json.dumps(report.counts(), indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    return report


def run_pipeline(config: SynthesisConfig) -> SynthesisReport:
    """Run the five stages into ``config.out`` and return the counts.

    Work recorded in the folder's journals is reused, so calling this again after
    an interruption (or with larger counts) only asks the model for what is missing.

    Raises:
        ConfigError: a backend that cannot write text (a reference baseline), or a
            folder made with another backend identity.
        BackendError: the model cannot be reached at all.
    """
    run = start_run(config)
    domains = run.domains()
    apis = run.apis(domains)
    slots = run.requests(apis)
    drafted = run.dialogues(slots, apis)
    accepted = run.tester(drafted, apis)
    return finish_run(run, accepted, apis)
