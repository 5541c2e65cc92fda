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
# # 02 · Run models
#
# Runs each model over the chosen levels into a run folder (resumable: a run that exists is only completed), then
# scores it. By default a quick look: the three reference backends (oracle, no-call, heuristic) and the embedded
# instruct model Qwen2.5-Coder-0.5B, prompted in `chat` mode (the dialogue as chat turns, earlier calls as tool calls
# and tool messages, the APIs as JSON-Schema tools, all rendered by the model's own chat template), on a few samples
# and one agent episode a level. `apibank reproduce` runs all nine models with larger samples: it adds the small Lynx
# v2 (our LoRA adapter on the 0.5B, trained in chat form) and its second stage `lynx-0.5b-s2d` (trained further on
# chat and the paper's layout; `docs/training.md`), the 1.5B, and the embedded Gemma 3 270M base model and its small
# Lynx (prompted with the paper's flattened text). Any model behind an OpenAI-compatible endpoint (`openai:<model>@<base_url>`) or a local transformers model
# (`hf:<path>`) can be added to `MODELS`.

# %%
from apibank_lib import load_benchmark
from apibank_lib.report import analysis, workbench

# %% tags=["parameters"]
DATA = None  # the bundled benchmark; or the root of an official API-Bank release
PROTOCOL = "v2"  # or "paper", the original evaluator
MODELS = [  # a quick look; `apibank reproduce` runs all nine (apibank_lib.report.reproduce.DEFAULT_MODELS)
    "oracle", "no-call", "heuristic",  # reference backends
    "llamacpp:qwen2.5-coder-0.5b",  # an embedded instruct model (chat prompts, tool calls)
]  # also llamacpp:lynx-0.5b (our LoRA on the 0.5B), gemma-3-270m, lynx-270m, qwen2.5-coder-1.5b, lynx-0.5b-s2d;
# any openai:<model>@<url> or hf:<path>
LEVELS = [1, 2, 3]
LIMIT = 10  # samples (and level-3 episodes) per level, whole dialogues drawn at random; None for all
SUBSET_SEED = 0  # a limit draws whole dialogues at random, stratified by first API, the same for every model: its seed
KIND_LIMITS = {"episodes": 1}  # a limit of its own per kind, e.g. {"response": 5}; kinds not named take LIMIT
MODEL_LIMITS = {  # smaller limits for slow models
    "llamacpp:gemma-3-270m": 2, "llamacpp:lynx-270m": 2, "llamacpp:qwen2.5-coder-0.5b": 2, "llamacpp:qwen2.5-coder-1.5b": 2,
    "llamacpp:lynx-0.5b": 2, "llamacpp:lynx-0.5b-s2d": 2,
}
LEVEL3 = "both"  # teacher-forced steps and agent episodes
MAX_STEPS = 12  # agent-loop step limit (the bundled level-3 items have at most 8 gold steps; 12 as `apibank run`)
OPTIONS = {}  # backend options per model, e.g. {"openai:m@http://127.0.0.1:8000/v1": {"timeout_s": 60}}
RUNS_DIR = None  # default: $APIBANK_RUNS, else runs/ in the project
TRIALS_MODEL = "llamacpp:qwen2.5-coder-0.5b"  # a sampled model answered several times: pass^k (None: no trials)
TRIALS = 2  # answers per sample, each with its own seed (apibank reproduce: 4)
TEMPERATURE = 0.7
TRIALS_LIMIT = 1  # level-1 API-call samples (apibank reproduce's standard profile: 60)

# %%
bench = load_benchmark(DATA)
analysis.use_data(bench)  # tables in results/<data source>/, figures in figures/<data source>/

# %%
settings = workbench.RunSettings(
    subset_seed=SUBSET_SEED,
    protocol=PROTOCOL, levels=LEVELS, limit=LIMIT, kind_limits=KIND_LIMITS, model_limits=MODEL_LIMITS, level3=LEVEL3, max_steps=MAX_STEPS,
    options=OPTIONS, runs_dir=RUNS_DIR,
)
runs, summary = workbench.run_models(MODELS, bench, settings, progress=False)

# %%
# NBVAL_CHECK_OUTPUT
summary[["model", "limit per level", "run folder"]]

# %%
summary

# %% [markdown]
# Each run, side by side: accuracy and ROUGE-L (both packages) per level, and its coverage.

# %%
comparison = analysis.compare_runs(runs)
analysis.save_table(comparison, "runs")
comparison

# %% [markdown]
# ## Repeated trials of a sampled model
#
# One run's intervals resample dialogues; they say nothing of how differently a sampled model answers the same sample
# again. `TRIALS_MODEL` answers about `TRIALS_LIMIT` level-1 API-call samples (whole dialogues drawn at random, seed
# `SUBSET_SEED`) `TRIALS` times at `TEMPERATURE`, each
# trial with its own seed, in one run folder (`apibank run --trials K --temperature T`); notebook 03 shows pass^k.

# %%
trial_settings = workbench.RunSettings(
    subset_seed=SUBSET_SEED,
    protocol=PROTOCOL, levels=[1], limit=TRIALS_LIMIT, tasks=("api",), trials=TRIALS, temperature=TEMPERATURE,
    options=OPTIONS, runs_dir=RUNS_DIR,
)
trial_runs, trial_summary = workbench.run_models([TRIALS_MODEL] if TRIALS_MODEL else [], bench, trial_settings, progress=False)
trial_summary
