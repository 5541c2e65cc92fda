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
# # 00 · Dataset statistics
#
# What the benchmark holds, beside the API-Bank paper's evaluation set: dialogues, turns, gold API calls and
# samples per level (the paper's three abilities), how many calls each dialogue has, and which domains they touch.
# With `DATA` set to an official release, the counts are checked against the release's known counts.

# %%
from apibank_lib import load_benchmark, statistics
from apibank_lib.report import analysis, plots

# %% tags=["parameters"]
DATA = None  # the bundled benchmark; or the root of an official API-Bank release

# %%
# NBVAL_CHECK_OUTPUT
bench = load_benchmark(DATA)
analysis.use_data(bench)  # tables in results/<data source>/, figures in figures/<data source>/
print(bench.name, bench.fingerprint)

# %% [markdown]
# ## The corpus beside the paper's
#
# Measured here on this data; the paper's figures are reported for its own evaluation set.

# %%
# NBVAL_CHECK_OUTPUT
table = analysis.statistics_table(bench)
analysis.save_table(table, "statistics")
table

# %% [markdown]
# Per level, with the official release's counts (original sample cutter, duplicate samples included) beside ours.

# %%
# NBVAL_CHECK_OUTPUT
levels = analysis.level_statistics_table(bench)
analysis.save_table(levels, "statistics_by_level")
levels

# %% [markdown]
# ## Reported against measured
#
# Where a quantity is measurable here (an official release's counts, the original evaluator's replay of its gold), the two are compared within a tolerance.

# %%
# NBVAL_CHECK_OUTPUT
checks = analysis.check_release(bench)
analysis.save_table(checks, "reported_vs_measured")
checks

# %% [markdown]
# ## Distributions

# %%
plots.calls_figure(statistics(bench));

# %%
# NBVAL_CHECK_OUTPUT
domains = analysis.calls_by_domain(bench)
analysis.save_table(domains, "calls_by_domain")
domains

# %%
plots.domains_figure(domains);
