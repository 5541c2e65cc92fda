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
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# # 06 · Training-data synthesis
#
# The paper's five agents, run by the pipeline of `apibank_lib.synthesis` with any backend: (1) domains, (2) APIs
# per domain, (3) an ability, the APIs and a user request, (4) the dialogue with calls, simulated results and replies,
# (5) the tester, which accepts or rejects each dialogue with a reason. Every answer is kept in the output folder, so
# a run resumes where it stopped. By default the embedded Gemma 3 270M *base* model drives it on a tiny count: it is
# a base model of 270M parameters, and most of what it writes fails the parsers or the tester; the table says where.
# Real synthesis needs a capable model behind an OpenAI-compatible endpoint (`BACKEND = "openai:<model>@<url>"`).
# Below it, the statistics of our training corpus (written by the team through the same five stages) beside the
# paper's training set.

# %%
import tempfile
from pathlib import Path
from apibank_lib import analysis
from apibank_lib.formats.train_corpus import default_corpus_dir
from apibank_lib.synthesis.pipeline import SynthesisConfig, run_pipeline
from apibank_lib.synthesis.tester import check_corpus

# %% tags=["parameters"]
BACKEND = "llamacpp:gemma-3-270m"  # or openai:<model>@<base_url>
N_DOMAINS = 2
APIS_PER_DOMAIN = 3
DIALOGUES_PER_DOMAIN = 2
MAX_TOKENS = 256
CONCURRENCY = 1
SEED = 0
OUT = None  # the synthesis folder (resumable); None: a temporary one
CORPUS = None  # the corpus to describe; None: data/train/corpus

# %% [markdown]
# ## The pipeline, stage by stage

# %%
out = Path(OUT) if OUT else Path(tempfile.mkdtemp(prefix="synthesis-"))
config = SynthesisConfig(BACKEND, out, n_domains=N_DOMAINS, apis_per_domain=APIS_PER_DOMAIN,
                         dialogues_per_domain=DIALOGUES_PER_DOMAIN, concurrency=CONCURRENCY, seed=SEED, max_tokens=MAX_TOKENS)
synthesis = run_pipeline(config)
analysis.save_table(synthesis.table(), "synthesis_stages")
synthesis.table()

# %%
synthesis.rejections_table().head(20)

# %% [markdown]
# ## Our training corpus beside the paper's training set
#
# Measured on the corpus with the tester (`apibank check-train`); the paper's figures are reported.

# %%
# NBVAL_CHECK_OUTPUT
report = check_corpus(CORPUS or default_corpus_dir())
corpus = analysis.training_statistics_table(report)
analysis.save_table(corpus, "training_corpus_statistics")
corpus

# %%
# NBVAL_CHECK_OUTPUT
report.table()
