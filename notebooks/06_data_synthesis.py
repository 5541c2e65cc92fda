# ---
# jupyter:
#   jupytext:
#     formats: ipynb,py:percent
#     text_representation:
#       extension: .py
#       format_name: percent
#       format_version: '1.3'
#       jupytext_version: 1.19.7
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# # 06 · Training-data synthesis
#
# The paper's five agents, run by the pipeline of `apibank_lib.synthesis` with any backend: (1) domains, (2) APIs
# per domain, (3) an ability, the APIs and a user request, (4) the dialogue with calls, simulated results and replies,
# (5) the tester, which accepts or rejects each dialogue with a reason. Every answer is kept in the output folder with
# its prompt, so a run resumes where it stopped and any rejection can be audited. With a backend that constrains its
# output (llama.cpp, an OpenAI-compatible server), each agent answers one JSON object under its stage's JSON Schema:
# the request agent may only name the domain's APIs, the dialogue agent's calls only the chosen APIs and their
# parameters. Beside it, the paper's baseline: a single agent asked for a whole example at once, under the same data
# standards, model, tester and corpus format.
#
# By default the embedded instruct model Qwen2.5-Coder-0.5B drives both on a tiny count (a minute or two on 2 cores).
# Below them, the records of the full generation that made our model-made corpus (`data/train/synthesized/`, made by
# `apibank synthesize`, see the data card there), and the statistics of both training corpora beside the paper's.

# %%
import tempfile
from pathlib import Path
from apibank_lib import load_benchmark
from apibank_lib.report import analysis, workbench
from apibank_lib.data.formats.train_corpus import default_corpus_dir
from apibank_lib.core.paths import DATA_DIR
from apibank_lib.synthesis import records
from apibank_lib.synthesis.pipeline import SynthesisConfig, run_pipeline
from apibank_lib.synthesis.single import run_single_agent
from apibank_lib.data.check_train import check_corpus

# %% tags=["parameters"]
BACKEND = "llamacpp:qwen2.5-coder-0.5b"  # or openai:<model>@<base_url>
N_DOMAINS = 1
APIS_PER_DOMAIN = 1  # (apibank reproduce's standard profile: 3)
DIALOGUES_PER_DOMAIN = 1
SINGLE_EXAMPLES = 1  # whole examples asked of the single agent
MAX_TOKENS = 1024
FORM = None  # "json" (schema-constrained) or "yaml"; None: json where the backend constrains output
LISTS = False  # show the agents lists and examples to keep away from (for capable models; small ones copy them)
CLARIFY = False  # let a dialogue ask the user a question before the calls (small models write the calls into it)
REQUEST_VALUES = False  # the request agent gives each input's value first; the dialogue's calls must use them
FEEDBACK = False  # a retry's prompt says why the try before was refused
RETRIES = 2  # ask again when the parser refuses an answer (with another sampling seed)
CONCURRENCY = 1
SEED = 0
OUT = None  # the synthesis folder (resumable); None: a temporary one
RECORDS = None  # the full generation's folders (multi-agent/, single-agent/); None: data/train/synthesized
CORPUS = None  # our AI-written corpus (by AI assistants following our brief); None: data/train/corpus
DATA = None  # where the equal-size arms are evaluated: the bundled benchmark, or the root of an official API-Bank release
WORTH = {  # display name -> model spec: a quick look at two of the equal-size adapters (models/synth-*-0.5b);
    # apibank reproduce compares the base model and all three (apibank_lib.report.reproduce.NOTEBOOK_COMPARISONS)
    "AI-written (ours)": "llamacpp:synth-hand-0.5b",
    "model-made": "llamacpp:synth-made-0.5b",
}
WORTH_LIMIT = 1  # API-call samples per level and model (apibank reproduce's standard profile: all); None for all
WORTH_LEVELS = [1]  # the levels the arms answer (apibank reproduce: all three)
SUBSET_SEED = 0  # a limit draws whole dialogues at random, stratified by first API, the same for every model: its seed
WORTH_PAIRS = [["model-made", "AI-written (ours)"]]  # (A, B) pairs among WORTH
N_BOOT = 200

# %% [markdown]
# ## The pipeline, stage by stage

# %%
out = Path(OUT) if OUT else Path(tempfile.mkdtemp(prefix="synthesis-"))
config = SynthesisConfig(BACKEND, out / "multi-agent", n_domains=N_DOMAINS, apis_per_domain=APIS_PER_DOMAIN,
                         dialogues_per_domain=DIALOGUES_PER_DOMAIN, concurrency=CONCURRENCY, seed=SEED,
                         max_tokens=MAX_TOKENS, form=FORM, lists=LISTS, retries=RETRIES, clarify=CLARIFY,
                         request_values=REQUEST_VALUES, feedback=FEEDBACK)
synthesis = run_pipeline(config)
analysis.save_table(synthesis.table(), "synthesis_stages")
synthesis.table()

# %%
synthesis.rejections_table().head(20)

# %% [markdown]
# ## The single agent, on the same model

# %%
single_config = SynthesisConfig(BACKEND, out / "single-agent", seed=SEED, max_tokens=MAX_TOKENS, form=FORM, lists=LISTS,
                                retries=RETRIES, clarify=CLARIFY, feedback=FEEDBACK)
single = run_single_agent(single_config, examples=SINGLE_EXAMPLES)
single.table()

# %% [markdown]
# ## The full generation: stages, the two methods, and the cost of a dialogue
#
# Read from the shipped generation records, without a model. The usable rate by the tester counts every answer
# that was to hold a dialogue (an unparseable one is unusable); the review's rate, where a review sheet is filled
# in, is over a seeded random sample of accepted dialogues, judged against the paper's data standards
# (`records.REVIEW_STANDARDS`). Intervals are 95% Wilson intervals.
#
# Who reviewed: the shipped reviews were done by the AI agent session that built the pipeline (one reviewer, not
# blind to the method; the table's `reviewer` column names it), not by humans. The paper's 94% usable comes from a
# human review, so the two rates are not comparable like for like.

# %%
recorded = Path(RECORDS) if RECORDS else DATA_DIR / "train" / "synthesized"
folders = (
    ("multi-agent", "multi-agent"),
    ("single agent", "single-agent"),
    ("multi-agent, request values", "values"),
    ("multi-agent, attempt 2", "attempt-2/multi-agent"),
    ("multi-agent, attempt 1", "attempt-1/multi-agent"),
)
methods = {name: recorded / folder for name, folder in folders}
methods = {name: folder for name, folder in methods.items() if (folder / "report.json").is_file()}
print(f"generation records in {recorded}: {', '.join(methods) or 'none'}")

# %%
# NBVAL_CHECK_OUTPUT
generation = records.stage_table(methods["multi-agent"]) if "multi-agent" in methods else None
if generation is not None:
    analysis.save_table(generation, "synthesis_generation_stages")
generation

# %%
# NBVAL_CHECK_OUTPUT
comparison = records.method_comparison(methods) if methods else None
if comparison is not None:
    analysis.save_table(comparison, "synthesis_methods")
comparison

# %%
# NBVAL_CHECK_OUTPUT
cost = records.cost_table(methods["multi-agent"]) if "multi-agent" in methods else None
cost

# %% [markdown]
# ## Both training corpora beside the paper's training set
#
# Measured on each corpus with the tester (`apibank check-train`); the paper's figures are reported.

# %%
# NBVAL_CHECK_OUTPUT
report = check_corpus(CORPUS or default_corpus_dir())
corpus = analysis.training_statistics_table(report)
analysis.save_table(corpus, "training_corpus_statistics")
corpus

# %%
# NBVAL_CHECK_OUTPUT
report.table()

# %%
# NBVAL_CHECK_OUTPUT
# The model-made corpus: every generation's, judged together, the newest first (it keeps an id two generations share).
made = [recorded / f / "corpus" for f in ("values", "multi-agent", "attempt-1/multi-agent", "attempt-2/multi-agent")]
made = [str(p) for p in made if p.is_dir()]
model_made = analysis.training_statistics_table(check_corpus(made), corpus="model-made corpus") if made else None
if model_made is not None:
    analysis.save_table(model_made, "model_made_corpus_statistics")
model_made

# %% [markdown]
# ## What the data is worth: equal-size training draws
#
# The instruct 0.5B trained with the recipe on equal-size draws (96 examples) of our AI-written corpus (written by
# AI assistants following our brief), of the model-made one (every generation's corpus, judged again by the
# tester), and of both together, half and half
# (`apibank train --source A --source B`), with one mix over the three levels (`models/synth-*-0.5b/training.json`
# holds each command and the fingerprint of the data it drew). Each is evaluated on the API-call samples of `DATA` (the bundled
# benchmark by default, or an official release; level 3: the
# teacher-forced steps) beside the base model, on the samples all of them answered. The paired tests compare two models sample by sample: an interval with dialogues resampled, and the
# p-value of a cluster sign-flip permutation test. By default a few samples per level; `apibank reproduce`'s
# standard profile answers all of them.

# %%
bench = load_benchmark(DATA)
analysis.use_data(bench)
settings = workbench.RunSettings(levels=WORTH_LEVELS, limit=WORTH_LIMIT, tasks=("api",), level3="steps", subset_seed=SUBSET_SEED)
worth_runs, _ = workbench.run_models(list(WORTH.values()), bench, settings, progress=False)
worth_names = {run.model: name for run, name in zip(worth_runs, WORTH)}
worth_by_name = {name: run.model for run, name in zip(worth_runs, WORTH)}

# %%
trained_on = {run.model: analysis.adapter_training_samples(run.model) for run in worth_runs}
worth = analysis.training_data_table(worth_runs, names=worth_names, training_samples=trained_on, n_boot=N_BOOT, seed=SEED)
analysis.save_table(worth, "synthesis_training_worth")
worth

# %%
worth_pairs = analysis.paired_tables(worth_runs, [[worth_by_name[a], worth_by_name[b]] for a, b in WORTH_PAIRS], n_boot=N_BOOT, seed=SEED)
analysis.save_table(worth_pairs, "synthesis_training_paired")
worth_pairs
