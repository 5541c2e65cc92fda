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
# # 08 · Transfer: our data against data nobody here wrote
#
# (Ours.) Every figure on the bundled benchmark was measured on data written in this project, by the same kind of
# writers (AI assistants following our briefs) who wrote the training corpus. With `DATA` set to a release (the
# official API-Bank data, or a part of it), this notebook puts each model's figures on the two side by side:
# accuracy per level with its interval, the error taxonomy and the step funnel; and it counts, per level, the
# patterns where the two data sets differ (token flows, dates said in words, values copied from earlier results,
# multi-call dialogues, how the APIs are described). Only counts and shares are shown, never a dialogue. Without
# `DATA` it shows the bundled benchmark alone. Models are run where their runs are missing (resumable; notebook 02
# makes the same runs).

# %%
from apibank_lib import load_benchmark
from apibank_lib.report import analysis, plots, transfer, workbench
from apibank_lib.data.datasets import data_source

# %% tags=["parameters"]
DATA = None  # a release to compare with the bundled benchmark (e.g. the root of an official API-Bank copy)
REFERENCE_DATA = None  # what DATA is compared with: the bundled benchmark
PROTOCOL = "v2"  # or "paper", the original evaluator
MODELS = [  # a quick look; `apibank reproduce` runs all nine (apibank_lib.report.reproduce.DEFAULT_MODELS)
    "oracle", "no-call", "heuristic",  # reference backends
    "llamacpp:qwen2.5-coder-0.5b",  # an embedded instruct model (chat prompts, tool calls)
]  # also llamacpp:lynx-0.5b (our LoRA on the 0.5B), gemma-3-270m, lynx-270m, qwen2.5-coder-1.5b, lynx-0.5b-s2d;
# any openai:<model>@<url> or hf:<path>
LEVELS = [1, 2, 3]
LIMIT = 10  # samples per level (whole dialogues drawn at random, the same for every model); None for all
KIND_LIMITS = {"episodes": 1}  # a limit of its own per kind, e.g. {"response": 5}; kinds not named take LIMIT
MODEL_LIMITS = {  # smaller limits for slow models
    "llamacpp:gemma-3-270m": 2, "llamacpp:lynx-270m": 2, "llamacpp:qwen2.5-coder-0.5b": 2, "llamacpp:qwen2.5-coder-1.5b": 2,
    "llamacpp:lynx-0.5b": 2, "llamacpp:lynx-0.5b-s2d": 2,
}
LEVEL3 = "both"  # teacher-forced steps and agent episodes
MAX_STEPS = 12  # agent-loop step limit
OPTIONS = {}  # backend options per model
RUNS_DIR = None  # default: $APIBANK_RUNS, else runs/ in the project
SUBSET_SEED = 0  # the seed of the limits' draw
N_BOOT = 200  # bootstrap replicates
SEED = 0

# %%
bench = load_benchmark(DATA)
reference = load_benchmark(REFERENCE_DATA)
analysis.use_data(bench)  # tables in results/<data source>/, figures in figures/<data source>/
sources = {data_source(REFERENCE_DATA): reference, data_source(DATA): bench}  # one entry when both are the same
names = list(sources)

# %% [markdown]
# ## Where the data differ
#
# Per level, the API-call samples (gold searches left out) that show each pattern, as counts and shares. A sample
# may show several. "Said nowhere before" is a value the call writes that appears neither in what was said nor in an
# earlier result (a date worked out from "tomorrow", a converted format, an inferred value). The last rows say how
# often a dialogue's first call is to the API described first: always in our prompts, which list the APIs in the
# order of their first call, not in a release's own prompts (the `paper` protocol's), which list them in another order.

# %%
# NBVAL_CHECK_OUTPUT
profile = transfer.data_profile(sources)
analysis.save_table(profile, "data_profile")
profile.assign(value=profile["share (%)"].fillna(profile["count"])).pivot_table(
    index=["level", "feature"], columns="data", values="value", sort=False
)

# %% [markdown]
# ## Accuracy on both
#
# Each model's API-call accuracy per level on each data source, with its 95% interval (dialogues resampled), the
# samples and dialogues it rests on, and which samples (the limit's draw); then the difference in points.

# %%
settings = workbench.RunSettings(
    protocol=PROTOCOL, levels=LEVELS, limit=LIMIT, kind_limits=KIND_LIMITS, model_limits=MODEL_LIMITS, level3=LEVEL3,
    max_steps=MAX_STEPS, options=OPTIONS, runs_dir=RUNS_DIR, subset_seed=SUBSET_SEED,
)
runs = {name: workbench.run_models(MODELS, data, settings, progress=False)[0] for name, data in sources.items()}
table = transfer.transfer_table(runs, n_boot=N_BOOT, seed=SEED)
analysis.save_table(table, "transfer")
table

# %%
# NBVAL_CHECK_OUTPUT
reference_rows = {name: analysis.select(group, prompt_mode="reference") for name, group in runs.items()}
transfer.transfer_table(reference_rows, n_boot=N_BOOT, seed=SEED)

# %%
plots.transfer_figure(table, names);

# %% [markdown]
# ## Errors and the step funnel on both
#
# The share of each run's wrong calls per error category (the paper's seven), and how far each gold call gets stage
# by stage, one column per data source.

# %%
errors = transfer.transfer_errors(runs)
analysis.save_table(errors, "transfer_errors")
errors

# %%
steps = transfer.transfer_funnel(runs, sources)
analysis.save_table(steps, "transfer_funnel")
steps
