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
# # 05 · Training data compared: ours against ToolAlpaca's format
#
# The paper fine-tunes the same base model on API-Bank's training data (Lynx) and on ToolAlpaca's data converted to
# API-Bank's format, and compares them on the Call ability. Here every row is the embedded Qwen2.5-Coder-0.5B-Instruct,
# evaluated in chat mode: the base model zero-shot, the small Lynx v2 (LoRA on a 260-example draw of our corpus), and
# two adapters trained with the same settings on equal-sized draws (96 level-1 examples each) of our corpus and of our
# ToolAlpaca-format training set. The small Lynx v2's second stage (`lynx-0.5b-s2d`: 240 more examples of our corpus,
# chat and the paper's layout, started from the small Lynx v2's adapter) is the fine-tuned row beside them; it is not
# one of the equal-size arms. Each adapter folder in `models/` records the exact command, data fingerprint, seed and
# loss curve; `RETRAIN = True` trains the three equal-comparison adapters again first (about 80 + 21 + 14 minutes on a
# 2-core CPU). The Gemma 3
# 270M adapters of the first comparison (`lynx-270m`, `ours-equal-270m`, `toolalpaca-equal-270m`) are retired from this
# notebook's defaults (at 270M parameters neither training set taught enough to compare them); they stay shipped, and
# adding them to `COMPARED` brings their rows back.
#
# `CALL_LIMIT = None` answers every level-1 API-call sample (`apibank reproduce --only 05 --param CALL_LIMIT=None`);
# replies (for ROUGE-L) are limited apart by `REPLY_LIMIT`. Where the fine-tuned model's gain comes from (errors, the
# step funnel, APIs seen in training) is shown on the same runs.
# `TOOLALPACA_EVAL` takes ToolAlpaca's own evaluation files (`eval_simulated.json`, `eval_real.json`; not part of this
# repository), converts them and judges the same models on them by function and arguments.

# %%
import pandas as pd
from pathlib import Path
from apibank_lib import load_benchmark
from apibank_lib.report import analysis, plots, workbench
from apibank_lib.runs import toolalpaca as toolalpaca_eval
from apibank_lib.models.registry import load_backend
from apibank_lib.data.formats.toolalpaca import convert_evaluation, read_toolalpaca
from apibank_lib.data.formats.train_corpus import corpus_schemas
from apibank_lib.core.paths import runs_dir
from apibank_lib.models.catalog import models_dir
from apibank_lib.training.workflow import retrain

# %% tags=["parameters"]
DATA = None  # the bundled benchmark; or the root of an official API-Bank release
PROTOCOL = "v2"
COMPARED = {  # display name -> model spec (shipped adapters by name; llamacpp:<base>+<adapter folder> for others).
    # A quick look at the equal-size arms; apibank reproduce compares five (apibank_lib.report.reproduce.NOTEBOOK_COMPARISONS:
    # these and the small Lynx v2 with its second stage)
    "Qwen2.5-Coder-0.5B base": "llamacpp:qwen2.5-coder-0.5b",
    "ours, equal size": "llamacpp:ours-equal-0.5b",
    "ToolAlpaca format, equal size": "llamacpp:toolalpaca-equal-0.5b",
}
CALL_LIMIT = 2  # level-1 API-call samples per model (apibank reproduce: 2 in the quick profile, all in the standard one); None for all
SUBSET_SEED = 0  # a limit draws whole dialogues at random, stratified by first API, the same for every model: its seed
REPLY_LIMIT = 1  # level-1 reply samples per model (for ROUGE-L); None for all
COMPARED_PAIRS = [  # (A, B) pairs among COMPARED
    ["ours, equal size", "ToolAlpaca format, equal size"],
    ["ours, equal size", "Qwen2.5-Coder-0.5B base"],
]
GAIN = ["Qwen2.5-Coder-0.5B base", "ours, equal size"]  # base and fine-tuned, for where the gain comes from
TOOLALPACA_EVAL = []  # paths of ToolAlpaca evaluation files to judge the same models on
TOOLALPACA_LIMIT = None  # converted samples per file; None for all
RETRAIN = False  # train the three adapters again with their recorded commands first
N_BOOT = 200
SEED = 0
RUNS_DIR = None

# %%
ADAPTERS = ("lynx-0.5b", "ours-equal-0.5b", "toolalpaca-equal-0.5b")
if RETRAIN:
    for folder in ADAPTERS:
        retrain(models_dir() / folder)

# %%
bench = load_benchmark(DATA)
analysis.use_data(bench)  # tables in results/<data source>/, figures in figures/<data source>/

# %%
settings = [  # API-call samples and replies, each with a limit of its own
    workbench.RunSettings(protocol=PROTOCOL, levels=[1], limit=limit, tasks=tasks, runs_dir=RUNS_DIR, subset_seed=SUBSET_SEED)
    for tasks, limit in ((("api",), CALL_LIMIT), (("response",), REPLY_LIMIT))
]
runs, summary = workbench.run_models(list(COMPARED.values()), bench, settings, progress=False)
names = {run.model: name for run, name in zip(runs, COMPARED)}
by_name = {name: run.model for run, name in zip(runs, COMPARED)}

# %% [markdown]
# ## The comparison, in the paper's layout
#
# Call accuracy with its 95% interval (dialogue bootstrap) and ROUGE-L of replies, with the training examples each adapter saw (from its `training.json`), on the samples every model answered; the paper's rows are reported for 7B models.

# %%
samples = {run.model: analysis.adapter_training_samples(run.model) for run in runs}
table = analysis.toolalpaca_table(runs, names=names, training_samples=samples, n_boot=N_BOOT, seed=SEED)
analysis.save_table(table, "toolalpaca_comparison")
table

# %%
plots.toolalpaca_figure(table);

# %% [markdown]
# ## Paired comparisons
#
# A - B on the same samples, with a 95% interval and a permutation test that flips whole dialogues.

# %%
pairs = analysis.paired_tables(runs, [[by_name[a], by_name[b]] for a, b in COMPARED_PAIRS], n_boot=N_BOOT, seed=SEED)
analysis.save_table(pairs, "toolalpaca_paired")
pairs

# %% [markdown]
# ## Where the gain comes from: base against fine-tuned
#
# The instruct 0.5B zero-shot and the small Lynx v2 (its LoRA on our corpus) on the same level-1 API-call samples
# (the runs above): their errors, how far their calls get (the step funnel), and their accuracy by how much of each
# gold API our training corpus has seen. No benchmark API name occurs in the corpus, by construction, so the groups
# differ in how many of the API's parameter names the corpus's APIs share.

# %%
gain_runs = [analysis.by_model(runs, by_name[name]) for name in GAIN]
gain = analysis.on_common_samples(gain_runs, level=1, kind="api")
gain_errors = analysis.error_distribution(gain, reported_columns=False)
analysis.save_table(gain_errors, "error_distribution_gain")
gain_errors

# %%
funnels = {name: analysis.funnel(r, bench) for r, name in zip(gain, GAIN)}
gain_funnel = pd.concat([f.assign(model=name) for name, f in funnels.items()], ignore_index=True)
analysis.save_table(gain_funnel, "funnel_gain")
gain_funnel

# %%
for (name, f), figure in zip(funnels.items(), ("funnel_base", "funnel_fine_tuned")):
    plots.funnel_figure(f, title=name, name=figure)

# %%
corpus = corpus_schemas()
seen = pd.concat([analysis.seen_in_training(r, bench, corpus).assign(model=name) for r, name in zip(gain, GAIN)], ignore_index=True)
analysis.save_table(seen, "seen_in_training")
seen

# %% [markdown]
# ## On ToolAlpaca's own evaluation instructions
#
# When `TOOLALPACA_EVAL` names files: each converted gold step is one sample, shown with the functions of its instruction's API entry and judged by function and arguments (ToolAlpaca's APIs are not executed). Answers go to `runs/toolalpaca-eval/`, so a rerun resumes.

# %%
ta_tables, ta_pairs = [], []
for source in map(Path, TOOLALPACA_EVAL):
    converted = convert_evaluation(read_toolalpaca(source))
    judged = {}
    for name, spec in COMPARED.items():
        out = runs_dir(RUNS_DIR) / "toolalpaca-eval" / f"{source.stem}-{spec.replace(':', '_')}.jsonl"
        judged[name] = toolalpaca_eval.evaluate_converted(converted, load_backend(spec), out=out, limit=TOOLALPACA_LIMIT, progress=False)
    ta_tables.append(toolalpaca_eval.accuracy_table(judged, n_boot=N_BOOT, seed=SEED).assign(source=source.name))
    ta_pairs.append(toolalpaca_eval.paired_table(judged, COMPARED_PAIRS, n_boot=N_BOOT, seed=SEED).assign(source=source.name))
if ta_tables:
    ta_table, ta_paired = pd.concat(ta_tables, ignore_index=True), pd.concat(ta_pairs, ignore_index=True)
    analysis.save_table(ta_table, "toolalpaca_eval")
    analysis.save_table(ta_paired, "toolalpaca_eval_paired")
    display(ta_table, ta_paired)
else:
    print("no ToolAlpaca evaluation files given (TOOLALPACA_EVAL)")

# %% [markdown]
# ## Training curves

# %%
curves = {}
for folder in ADAPTERS:
    path = models_dir() / folder / "loss.csv"
    if path.is_file():
        curves[folder] = pd.read_csv(path)
plots.training_loss_figure(curves);
