"""The single-agent baseline: one prompt asks one agent for a whole training example.

The paper measures its five-agent recipe against one agent given the whole instruction (5% of examples usable with
ChatGPT, 25% with GPT-4, against 94% for the agents). :func:`run_single_agent` is that baseline on our terms: the
same model, data standards, answer form, tester and corpus format as :func:`~apibank_lib.synthesis.pipeline.run_pipeline`,
but one answer holds the domain, its APIs, the request, the calls with their results and the replies. It stops at
a number of examples or when it has spent a token budget (give it the multi-agent run's tokens to compare at equal
cost). Its folder has the pipeline's layout with two stages: ``examples`` (the answers, parsed) and ``tester``.
"""

from __future__ import annotations

import random
from collections.abc import Sequence

from apibank_lib.core.types import ToolSchema
from apibank_lib.data.check_train import opening
from apibank_lib.data.formats.train_corpus import SEARCHER, CorpusDialogue
from apibank_lib.prompting.prompts import Prompt
from apibank_lib.synthesis import schemas as stage_schemas
from apibank_lib.synthesis.agents import (
    _DOMAIN,
    ABILITY_TEXT,
    API_LIMITS,
    API_RULES,
    DIALOGUE_RULES,
    EXAMPLES,
    INTRO,
    LEAD,
    RequestDraft,
    SynthesisParseError,
    _load,
    _prompt,
    extract_payload,
    fenced,
    in_form,
    read_apis,
    read_dialogue,
    render_apis,
    shape_rules,
    slugify,
)
from apibank_lib.synthesis.pipeline import (
    ABILITY_CYCLE,
    RequestSlot,
    SynthesisConfig,
    SynthesisDomain,
    SynthesisReport,
    finish_run,
    start_run,
)

__all__ = ["SINGLE_STAGES", "Example", "single_prompt", "parse_example", "run_single_agent"]

SINGLE_STAGES: tuple[str, ...] = ("examples", "tester")
"""The baseline's stages: the one agent's answers, then the same tester as the pipeline's."""

_SHORT = {"call": "call", "retrieve_call": "retrieve", "plan_retrieve_call": "plan"}


def single_prompt(ability: str, references: list[ToolSchema], form: str = "yaml", *, clarify: bool = True) -> Prompt:
    """Ask one agent for a whole example of ``ability``: a new domain, its APIs and the dialogue.

    Args:
        ability: ``call``, ``retrieve_call`` or ``plan_retrieve_call``.
        references: evaluation APIs shown for their layout only (none: no layout shown, as with ``lists=False``).
        form: ``yaml`` or ``json``.
        clarify: the dialogue may ask the user for a missing detail (as the pipeline's dialogue agent, with the
            pipeline's ``clarify`` setting).
    """
    written = "YAML" if form == "yaml" else "JSON"
    low, high = API_LIMITS[ability]
    example = in_form(EXAMPLES[ability], form)
    answer = (
        f"Answer with one YAML mapping inside a {LEAD.strip()} block with three keys: domain (its name), apis (the list "
        "of APIs) and dialogue (the mapping, as in the example)."
        if form == "yaml"
        else 'Answer with one JSON object: {"domain": "...", "apis": [...], "dialogue": {...as in the example...}}.'
    )
    system = (
        INTRO + f"\nYou now write one complete training example on your own, in {written}: a new domain, the APIs its "
        "service offers, a user's request, and the dialogue that fulfils it with calls, results and replies.\n\n"
        + DIALOGUE_RULES.format(written=written)
    )
    user = (
        "Choose an everyday domain in which a person could ask an assistant to get something done through an online "
        "service, away from alarms, reminders, agendas, meetings, banking, stocks, hotels, health, weather, "
        "translation, email, music and accounts.\n"
        f"Invent {high} APIs of that service. Rules for the APIs:\n" + API_RULES
        + (
            "\n\nTwo existing APIs show the layout of an API (copy their form, not their names or purposes):\n"
            + fenced(render_apis(references, form), form)
            if references
            else ""
        )
        + f"\n\nThen write a dialogue of the ability {ability}, where {ABILITY_TEXT[ability]} "
        f"The user's request needs {low} to {high} of your APIs and gives every detail the calls need: names, dates in "
        "2023, numbers, codes.\n"
        + shape_rules(ability, clarify)
        + ("\n\nAn example dialogue, from another domain (its APIs are not yours):\n" + fenced(example, form) if references else "")
        + "\n\n"
        + answer
    )
    return _prompt("examples", system, user, LEAD, form)


class Example:
    """One parsed answer of the single agent: its domain, APIs and dialogue."""

    def __init__(self, domain: str, apis: list[ToolSchema], dialogue: CorpusDialogue) -> None:
        self.domain = domain
        self.apis = apis
        self.dialogue = dialogue


def parse_example(
    text: str,
    ability: str,
    *,
    number: int,
    evaluation_names: list[str],
    defined: set[str],
    evaluation: Sequence[ToolSchema] = (),
) -> Example:
    """The single agent's answer: ``domain``, ``apis`` and ``dialogue``, each read as the pipeline's stages read
    theirs.

    Args:
        text: the answer.
        ability: the ability asked for.
        number: the example's number (its id is ``<domain slug>-<ability>-<number>``).
        evaluation_names: API names it must not reuse.
        evaluation: the evaluation APIs none may be under another name (:func:`~apibank_lib.data.check_train.near_evaluation`).
        defined: API names earlier examples defined (names are unique in a corpus).

    Raises:
        SynthesisParseError (stage ``examples``): not YAML/JSON, missing or unknown keys, a bad domain name
            (``shape``/``value``), an API a parser or the schema check refuses, an API name an earlier example
            defined (``value``), a dialogue of another ability or shape.
    """
    data = _load(extract_payload(text, "examples"), "examples")
    keys = {"domain", "apis", "dialogue"}
    if not isinstance(data, dict) or set(data) != keys:
        got = sorted(map(str, data)) if isinstance(data, dict) else type(data).__name__
        raise SynthesisParseError("examples", "shape", f"expected one mapping of domain, apis and dialogue, not {got}")
    domain = data["domain"]
    if not isinstance(domain, str) or len(domain) > 40 or not _DOMAIN.match(domain.strip()):
        raise SynthesisParseError("examples", "value", f"the domain is not a short name: {domain!r}")
    apis = read_apis(data["apis"], "examples", evaluation_names, evaluation)
    again = [s.name for s in apis if s.name in defined]
    if again:
        raise SynthesisParseError("examples", "value", f"API {', '.join(again)} was defined by an earlier example")
    if any(s.name == SEARCHER for s in apis):
        raise SynthesisParseError("examples", "value", f"{SEARCHER} comes with the ability; it is not an invented API")
    slug = slugify(domain)
    d = read_dialogue(
        data["dialogue"], ability, "examples", dialogue_id=f"{slug}-{_SHORT[ability]}-{number}", domain=domain.strip(),
        path=f"corpus/{slug}.yaml", index=number - 1,
    )
    return Example(domain.strip(), apis, d)


def run_single_agent(config: SynthesisConfig, *, examples: int, token_budget: int | None = None) -> SynthesisReport:
    """Ask the single agent for up to ``examples`` examples (fewer once ``token_budget`` tokens are spent), judge
    them with the tester and write the accepted ones as a corpus in ``config.out``.

    The abilities cycle as the pipeline's request slots do; the style references are drawn from the seed. Work in
    the folder's journal is reused, so an interrupted run resumes. ``n_domains``, ``apis_per_domain`` and
    ``dialogues_per_domain`` of the config are not used.
    """
    run = start_run(config, method="single-agent", stages=SINGLE_STAGES)
    from apibank_lib.env.tools.registry import toolset_for_level

    tools = toolset_for_level(1)
    names = sorted(n for n in tools if n != SEARCHER)
    start = random.Random(f"{config.seed}:single:abilities").randrange(len(ABILITY_CYCLE))
    defined: set[str] = set()
    apis: dict[SynthesisDomain, list[ToolSchema]] = {}
    drafted: list[tuple[RequestSlot, CorpusDialogue]] = []
    spent = 0
    for number in range(1, examples + 1):
        if token_budget is not None and spent >= token_budget:
            break
        ability = ABILITY_CYCLE[(start + number - 1) % len(ABILITY_CYCLE)]
        refs = [tools.schema(n) for n in random.Random(f"{config.seed}:single:{number}:references").sample(names, 2)]
        prompt = single_prompt(ability, refs if config.lists else [], run.form, clarify=config.clarify)
        schema = stage_schemas.example_schema(ability, API_LIMITS[ability][1])
        outcome = run.attempt(
            "examples",
            f"examples/{number}",
            prompt,
            lambda t, a=ability, n=number: parse_example(
                t, a, number=n, evaluation_names=run.eval_names, defined=defined, evaluation=run.eval_schemas
            ),
            schema,
        )
        accepted_answer = run.tally("examples", outcome)
        stage = run.stages["examples"]  # every try counts against the budget, as in the pipeline's totals
        spent = stage.prompt_tokens + stage.completion_tokens
        if not accepted_answer:
            continue
        example: Example = outcome.value
        defined.update(s.name for s in example.apis)
        run.stages["examples"].items += 1
        domain = SynthesisDomain(example.domain, slugify(example.domain))
        apis.setdefault(domain, []).extend(example.apis)
        called = tuple(t.call.name for t in example.dialogue.api_turns if t.call is not None and t.call.name != SEARCHER)
        draft = RequestDraft(ability, tuple(dict.fromkeys(called)), opening(example.dialogue))
        drafted.append((RequestSlot(domain, number, example.dialogue.id, draft), example.dialogue))
    accepted = run.tester(drafted, apis)
    return finish_run(run, accepted, apis)
