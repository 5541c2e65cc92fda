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
# # 03 · Scores
#
# The paper's main table (API-call accuracy and ROUGE-L per ability, and in total) for every run, with 95%
# confidence intervals that resample dialogues, beside the paper's reported rows; paired comparisons of chosen runs;
# accuracy by domain. "Total" accuracy is the micro average over every API-call sample of the three levels. Level 3
# has three accuracies: teacher-forced steps; items whose every step is right (the paper's Plan+Retrieve+Call metric,
# the column its level-3 figures stand in); and our free-running agent episodes, which nobody reported. Each interval
# says how many dialogues (level-3 items) it resamples, and one over fewer than 10 is left blank. The runs are the ones
# notebook 02 made: run it first, with the same parameters.

# %%
from apibank_lib import load_benchmark
from apibank_lib.report import analysis, compounding, plots, workbench

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
N_BOOT = 200  # bootstrap replicates
SEED = 0
PRICE_PER_MTOK = None  # (in, out) price per million tokens, e.g. (0.15, 0.60): the main table gains a price column
PAIRS = [["heuristic", "no-call"]]  # (A, B) pairs to compare
BREAKDOWN_MODEL = "heuristic"

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
# ## The main table
#
# Every run measured here, and the paper's rows (reported). The last columns say what each run cost: tokens in and
# out (blank for the reference backends, which count none), seconds per answer (median, with the p90; an episode's
# answer is all its steps), answers per second of the runner's answering time (blank where the run folder holds
# answers of other samples too, whose time it cannot tell apart), and with `PRICE_PER_MTOK` the price.

# %%
main = analysis.main_table(runs, n_boot=N_BOOT, seed=SEED, price_per_mtok=PRICE_PER_MTOK)
analysis.save_table(main, "main_table")
compact = analysis.compact_main_table(main)
analysis.save_table(compact, "main_table_compact")
compact

# %% [markdown]
# The reference backends' rows do not depend on the machine, less the seconds they took: the rest is checked when
# the notebooks are tested.

# %%
# NBVAL_CHECK_OUTPUT
reference = analysis.main_table(analysis.select(runs, prompt_mode="reference"), dated=False, n_boot=N_BOOT, seed=SEED)
reference.drop(columns=list(analysis.TIMED_COLUMNS))

# %%
plots.accuracy_figure(main);

# %% [markdown]
# ## ROUGE-L by package
#
# `v2` reports ROUGE-L of the `rouge-score` package (stemming off), `paper` that of the `rouge` package, as the original evaluator did; both are computed for every reply.

# %%
comparison = analysis.compare_runs(runs)
plots.rouge_figure(comparison);

# %% [markdown]
# ## Paired comparisons
#
# A - B on the samples both runs answered, with a 95% interval and the p-value of a permutation test that flips whole dialogues.

# %%
# NBVAL_CHECK_OUTPUT
pairs = analysis.paired_tables(runs, PAIRS, n_boot=N_BOOT, seed=SEED)
analysis.save_table(pairs, "paired_comparisons")
pairs

# %% [markdown]
# ## How errors compound at level 3
#
# Per model, on the same level-3 items: step accuracy (every teacher-forced step a sample), item accuracy (an item is
# right only when all its steps are: the paper's Plan+Retrieve+Call metric), the item accuracy that independent steps
# would give (the mean over items of step accuracy to the power of the item's steps), and the agent episodes'
# success (free-running), each with a 95% interval over items; over fewer than 10 items the interval is left blank.

# %%
compound = compounding.compounding_table(runs, n_boot=N_BOOT, seed=SEED)
analysis.save_table(compound, "compounding")
print(compounding.summary(compound))
compound

# %% [markdown]
# ## Repeated trials: pass^k
#
# The sampled model notebook 02 answered `TRIALS` times per sample: pass^k is the chance that k of its trials, drawn
# from a sample's, are all right (tau-bench's measure of consistency), pass@k that at least one is; each trial's own
# accuracy and the share of samples whose trials disagree say how far two single runs of it can differ. Intervals
# resample dialogues.

# %%
if TRIALS_MODEL:
    trial_settings = workbench.RunSettings(
    subset_seed=SUBSET_SEED,
        protocol=PROTOCOL, levels=[1], limit=TRIALS_LIMIT, tasks=("api",), trials=TRIALS, temperature=TEMPERATURE,
        options=OPTIONS, runs_dir=RUNS_DIR,
    )
    trial_run = workbench.saved_runs([TRIALS_MODEL], bench, trial_settings)[0]
    pass_k = analysis.trials_table(trial_run, n_boot=N_BOOT, seed=SEED)
    analysis.save_table(pass_k, "pass_k")
    plots.pass_k_figure(pass_k, title=TRIALS_MODEL)
    from IPython.display import display

    display(pass_k)
    display(analysis.sample_success_rates(trial_run))

# %% [markdown]
# ## Accuracy by domain, and in single- and multi-call dialogues

# %%
# NBVAL_CHECK_OUTPUT
by_domain = analysis.breakdown(analysis.by_model(runs, BREAKDOWN_MODEL), "domain", n_boot=N_BOOT, seed=SEED)
analysis.save_table(by_domain, "accuracy_by_domain")
by_domain

# %%
plots.breakdown_figure(by_domain, "domain", title=BREAKDOWN_MODEL);

# %%
# NBVAL_CHECK_OUTPUT
analysis.breakdown(analysis.by_model(runs, BREAKDOWN_MODEL), "calls", bench=bench, n_boot=N_BOOT, seed=SEED)
