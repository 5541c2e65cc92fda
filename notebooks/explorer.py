# ---
# jupyter:
#   jupytext:
#     formats: ipynb,py:percent
#     text_representation:
#       extension: .py
#       format_name: percent
#       format_version: '1.3'
#       jupytext_version: 1.19.6
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
# ---

# %% [markdown]
# # Explorer: predictions beside the gold
#
# Pick a level, a dialogue (a level-3 item), one run or two side by side, and narrow the dialogues down by error category or gold API. For every sample the view shows the gold call or reply beside each run's prediction, executed result and verdict; at level 3 the step slider walks through each run's agent episode.
#
# The cell below the parameters makes the reference runs (or resumes them instantly); to look at your own runs, give their folders instead: `Explorer(bench, ["runs/<folder>", ...])`.

# %%
from apibank_lib import load_benchmark
from apibank_lib.report import workbench
from apibank_lib.report.explorer import Explorer

# %% tags=["parameters"]
DATA = None  # the bundled benchmark; or the root of an official API-Bank release
PROTOCOL = "v2"  # or "paper"
LEVEL = 1  # the level shown first
LIMIT = None  # samples (and level-3 episodes) per level in each run; None: all, so that every dialogue is listed
RUNS = ["oracle", "heuristic"]  # reference backends: seconds each, no model needed

# %%
bench = load_benchmark(DATA)
runs, summary = workbench.run_models(RUNS, bench, workbench.RunSettings(protocol=PROTOCOL, limit=LIMIT), progress=False)
summary

# %%
Explorer(bench, runs, level=LEVEL)
