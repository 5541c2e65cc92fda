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
# # 04 · Errors
#
# Every wrong API call of every run, by error category: in the paper's seven categories (ours mapped onto them:
# "Wrong Values" counts as "Invalid Input Parameters") beside the paper's reported shares, and in our own; examples of
# each; and the step funnel: how far each gold call gets, from retrieving the right API to a good reply. The runs are
# the ones notebook 02 made: run it first, with the same parameters.

# %%
from apibank_lib import load_benchmark
from apibank_lib.report import analysis, plots, workbench

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
FUNNEL_MODEL = "heuristic"
EXAMPLES_MODEL = "heuristic"

# %%
bench = load_benchmark(DATA)
analysis.use_data(bench)  # tables in results/<data source>/, figures in figures/<data source>/

# %%
# the runs notebook 02 made with the same parameters (nothing is answered here)
settings = workbench.RunSettings(
    subset_seed=SUBSET_SEED,
    protocol=PROTOCOL, levels=LEVELS, limit=LIMIT, kind_limits=KIND_LIMITS, model_limits=MODEL_LIMITS, level3=LEVEL3, max_steps=MAX_STEPS,
    options=OPTIONS, runs_dir=RUNS_DIR,
)
runs = workbench.saved_runs(MODELS, bench, settings)

# %% [markdown]
# ## Error distribution, the paper's layout

# %%
errors = analysis.error_distribution(runs)
analysis.save_table(errors, "error_distribution")
errors

# %%
# NBVAL_CHECK_OUTPUT
analysis.error_distribution(analysis.select(runs, prompt_mode="reference"))

# %%
plots.errors_figure(errors);

# %% [markdown]
# ## Our categories
#
# As measured, without mapping; checker and tool errors blame our code, not the model, and are counted apart.

# %%
ours = analysis.error_distribution(runs, mapped=False)
analysis.save_table(ours, "error_distribution_ours")
ours

# %% [markdown]
# ## The step funnel

# %%
# NBVAL_CHECK_OUTPUT
funnel = analysis.funnel(analysis.by_model(runs, FUNNEL_MODEL), bench)
analysis.save_table(funnel, "funnel")
funnel

# %%
plots.funnel_figure(funnel, title=FUNNEL_MODEL);

# %% [markdown]
# ## Examples of each category

# %%
# NBVAL_CHECK_OUTPUT
examples = analysis.failure_examples(analysis.by_model(runs, EXAMPLES_MODEL))
analysis.save_table(examples, "failure_examples")
examples
