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
# # 01 · The sandbox
#
# The 75 tool classes in their two tool sets; one dialogue replayed call by call in a fresh sandbox, with what each
# call changed; the API search behind ToolSearcher; a call that fails and why; and one prediction judged under both
# grading protocols.

# %%
from apibank_lib import PAPER, V2, Grader, load_benchmark, target_text
from apibank_lib.report import sandbox_demo

# %% tags=["parameters"]
DATA = None  # the bundled benchmark; or the root of an official API-Bank release
PROTOCOL = "v2"
DIALOGUE = None  # a level-1 dialogue id; None: the first with three calls or more
SEARCH = "book a hotel room for two nights"

# %%
bench = load_benchmark(DATA)

# %% [markdown]
# ## The tools by domain

# %%
# NBVAL_CHECK_OUTPUT
tools = sandbox_demo.tools_table()
tools.groupby(["tool set", "domain"]).size().rename("APIs").reset_index()

# %%
# NBVAL_CHECK_OUTPUT
tools

# %% [markdown]
# ## One dialogue, replayed step by step
#
# Each API record runs in one sandbox, in order; the last column says which database records it added (+), removed (-) or changed (~).

# %%
# NBVAL_CHECK_OUTPUT
dialogue = sandbox_demo.pick_dialogue(bench, 1, DIALOGUE)
print(dialogue.id)
sandbox_demo.replay_dialogue(bench, dialogue, PROTOCOL)

# %% [markdown]
# ## API search in action
#
# ToolSearcher embeds the keywords and every API's name and description with all-MiniLM-L6-v2 and returns the closest API (cosine similarity).

# %%
sandbox_demo.search_table(bench, SEARCH, level=1, k=5)

# %%
bench.sandbox(2).execute(f"[ToolSearcher(keywords={SEARCH!r})]").output

# %% [markdown]
# ## A call that fails, and why
#
# The wrong password is the tool's own failure (the model sees its text); the error taxonomy names it.

# %%
# NBVAL_CHECK_OUTPUT
login = sandbox_demo.sample_of(bench, "GetUserToken")
print(target_text(login))
wrong = Grader(bench, V2).judge_api(login, "[GetUserToken(username='ChloeDavis', password='wrong')]")
print(wrong.category.value, "|", wrong.reason)

# %% [markdown]
# ## Both protocols on the same call
#
# The gold call of an `AddMeeting` sample writes its attendees as a list in text, as the official data does: `v2` parses the list; the original evaluator (`paper`) keeps it as text, so the meeting it books differs from the gold.

# %%
# NBVAL_CHECK_OUTPUT
meeting = sandbox_demo.sample_of(bench, "AddMeeting")
sandbox_demo.compare_protocols(bench, meeting, target_text(meeting))
