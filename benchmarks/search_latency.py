"""ToolSearcher embedding latency, the ONNX Runtime default against numpy and sentence-transformers, in one run.

Usage: .venv/bin/python benchmarks/search_latency.py [--queries N] [--cold-runs N] [--threads N]

* cold: a new Python process imports apibank_lib.retrieval.search (and its embedders), loads the embedder, builds the index and answers one
  query; the figure is the wall time of the whole process (interpreter start included), with the API embeddings
  already in the disk cache (a usual ``apibank search``) and with an empty cache (the very first search);
* API-embedding build: embedding every candidate API's text in a warm process (no disk cache);
* warm, new query: a different query each time, so each one is embedded (median and 90th percentile);
* warm, repeated query: the same queries again, served from the in-memory cache.

numpy and sentence-transformers run with one thread (the library defaults) unless --threads says otherwise;
ONNX Runtime with its default (two threads on two cores or more). The embedders are measured in alternation so
that a change in the machine's load hits all of them. The candidates are 52 level-1/2-style
APIs written below, so the script depends only on apibank_lib.retrieval.search, apibank_lib.retrieval.embedders and the types they take.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

TARGET_MS = 5.0
ROOT = Path(__file__).resolve().parents[1]

APIS = [
    ("AddAgenda", "Add a schedule item to the user's agenda with its time and location."),
    ("AddAlarm", "Set an alarm clock for the user at a given time."),
    ("AddMeeting", "Book a meeting with its topic, time, location and attendees."),
    ("AddReminder", "Add a reminder with its content and time."),
    ("AddScene", "Create a smart-home scene from a list of devices."),
    ("AppointmentRegistration", "Register an appointment with a doctor at a hospital on a given date."),
    ("CancelRegistration", "Cancel a hospital appointment by its id."),
    ("CancelTimedSwitch", "Cancel a timed switch of a smart-home device."),
    ("CheckToken", "Check which user a login token belongs to."),
    ("DeleteAccount", "Delete the user's account, given the login token."),
    ("DeleteAgenda", "Delete an item from the user's agenda."),
    ("DeleteAlarm", "Delete an alarm clock at a given time."),
    ("DeleteMeeting", "Cancel a booked meeting."),
    ("DeleteReminder", "Delete a reminder by its content and time."),
    ("DeleteScene", "Delete a smart-home scene by name."),
    ("Dictionary", "Look up the definitions of an English word."),
    ("DocumentQA", "Answer a question about the content of a document at a given URL."),
    ("EmergencyKnowledge", "Give first-aid advice for a symptom."),
    ("ForgotPassword", "Reset a forgotten password with a verification code sent by email."),
    ("GetToday", "Get today's date."),
    ("GetUserToken", "Log in with a username and password and get a token."),
    ("ImageCaption", "Describe the content of an image at a given URL."),
    ("ModifyAgenda", "Change the time or location of an agenda item."),
    ("ModifyAlarm", "Move an alarm clock from one time to another."),
    ("ModifyMeeting", "Change the time, location or attendees of a meeting."),
    ("ModifyPassword", "Change the user's password, given the old one."),
    ("ModifyRegistration", "Move a hospital appointment to another date or doctor."),
    ("ModifyReminder", "Change the content or time of a reminder."),
    ("ModifyScene", "Change the devices of a smart-home scene."),
    ("OpenBankAccount", "Open a bank account with an account number, a password and a name."),
    ("PlayMusic", "Play a song by its name."),
    ("QueryAgenda", "List the agenda items for a date, time or location."),
    ("QueryAlarm", "Check whether the user has an alarm clock at a given time."),
    ("QueryBalance", "Get the balance of the user's bank account."),
    ("QueryHealthData", "Get the user's health data between two times."),
    ("QueryHistoryToday", "Tell what happened on this day in history."),
    ("QueryMeeting", "Check the details of a meeting."),
    ("QueryRegistration", "List a patient's hospital appointments on a date."),
    ("QueryReminder", "Check the reminders at a given time."),
    ("QueryScene", "List the devices of a smart-home scene."),
    ("QueryStock", "Get the price of a stock on a given date."),
    ("RecordHealthData", "Record health measurements such as blood pressure and heart rate for a user."),
    ("RegisterUser", "Create a user account with a username, password and email."),
    ("SearchEngine", "Search the web and return the most relevant pages."),
    ("SendEmail", "Send an email to a receiver with a subject and content."),
    ("SpeechRecognition", "Transcribe the audio file at a given URL to text."),
    ("SymptomSearch", "List the diseases that match a symptom."),
    ("TimedSwitch", "Switch a smart-home device on or off at a given time."),
    ("Translate", "Translate text from one language into another."),
    ("Wiki", "Look up an entity in Wikipedia and return a summary."),
    ("Calculator", "Compute an arithmetic formula."),
    ("ToolSearcher", "Search the available APIs by keywords and return the best match."),
]

WORDS = ["alarm", "meeting", "hotel", "stock", "weather", "reminder", "translate", "doctor", "balance", "music",
         "password", "scene", "history", "symptom", "calendar", "email", "wiki", "calculate", "account", "lights"]  # fmt: skip
VERBS = ["set", "find", "book", "check", "cancel", "change", "show", "add", "delete", "look up"]

# One cold search in a fresh process; argv: embedder class, query. Prints its own phase timings as JSON.
CHILD = """
import json, sys, time
t0 = time.perf_counter()
from apibank_lib.retrieval import embedders, search
from apibank_lib.core.types import ToolSchema
t1 = time.perf_counter()
embedder = getattr(embedders, sys.argv[1])()
t2 = time.perf_counter()
index = search.ToolIndex([ToolSchema(n, d, {}, {}) for n, d in json.loads(sys.stdin.read())], embedder)
t3 = time.perf_counter()
index.search(sys.argv[2])
t4 = time.perf_counter()
print(json.dumps({"import": t1 - t0, "load": t2 - t1, "index": t3 - t2, "query": t4 - t3}))
"""


def distinct_queries(n: int) -> list[str]:
    """``n`` different short queries of 4 to 6 words."""
    return [f"{VERBS[i % 10]} {WORDS[(i * 7) % 20]} {WORDS[(i * 3 + 1) % 20]} {i}" for i in range(n)]


def cold_run(cls: str, cache: str, query: str) -> dict[str, float]:
    """Run one cold search in a new process; its phase timings plus ``wall``, the whole process's wall time."""
    env = {**os.environ, "APIBANK_CACHE": cache, "PYTHONPATH": str(ROOT)}
    start = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-c", CHILD, cls, query], input=json.dumps(APIS), env=env, cwd=ROOT,
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    wall = time.perf_counter() - start
    return {**json.loads(done.stdout.strip().splitlines()[-1]), "wall": wall}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--queries", type=int, default=200, help="distinct warm queries per embedder")
    parser.add_argument("--cold-runs", type=int, default=3, help="fresh processes per embedder and cache state")
    parser.add_argument("--threads", type=int, default=1, help="BLAS threads (numpy) and torch threads")
    parser.add_argument("--onnx-threads", type=int, default=None, help="ONNX Runtime threads (default: the library's)")
    args = parser.parse_args()
    if min(args.queries, args.cold_runs, args.threads) < 1:
        parser.error("--queries, --cold-runs and --threads must be at least 1")
    names = {
        "onnx (default)": "OnnxMiniLMEmbedder",
        "numpy": "MiniLMEmbedder",
        "sentence-transformers": "SentenceTransformerEmbedder",
    }
    load_before = os.getloadavg()[0]

    cold: dict[str, dict[str, list[dict[str, float]]]] = {label: {"empty": [], "cached": []} for label in names}
    for _ in range(args.cold_runs):
        for label, cls in names.items():
            with tempfile.TemporaryDirectory(prefix="apibank-bench-") as cache:
                cold[label]["empty"].append(cold_run(cls, cache, "set an alarm for seven"))
                cold[label]["cached"].append(cold_run(cls, cache, "set an alarm for seven"))

    os.environ["APIBANK_CACHE"] = tempfile.mkdtemp(prefix="apibank-bench-")
    import numpy as np

    from apibank_lib.core.types import ToolSchema
    from apibank_lib.retrieval.embedders import MiniLMEmbedder, OnnxMiniLMEmbedder, SentenceTransformerEmbedder
    from apibank_lib.retrieval.search import ToolIndex

    schemas = [ToolSchema(n, d, {}, {}) for n, d in APIS]
    embedders = {
        "onnx (default)": OnnxMiniLMEmbedder(threads=args.onnx_threads),
        "numpy": MiniLMEmbedder(blas_threads=args.threads),
        "sentence-transformers": SentenceTransformerEmbedder(threads=args.threads),
    }
    build: dict[str, list[float]] = {label: [] for label in embedders}
    indexes: dict[str, ToolIndex] = {}
    for _ in range(3):
        for label, embedder in embedders.items():
            start = time.perf_counter()
            indexes[label] = ToolIndex(schemas, embedder, use_disk_cache=False)
            build[label].append(time.perf_counter() - start)

    queries = distinct_queries(args.queries)
    new: dict[str, list[float]] = {label: [] for label in embedders}
    hit: dict[str, list[float]] = {label: [] for label in embedders}
    for times in (new, hit):  # the second pass asks the same queries again: in-memory cache hits
        for chunk in range(0, len(queries), 10):
            for label, index in indexes.items():
                for q in queries[chunk : chunk + 10]:
                    start = time.perf_counter()
                    index.search(q)
                    times[label].append(time.perf_counter() - start)
    onnx_index, numpy_index, st_index = indexes.values()
    top1_same = sum(
        onnx_index.search(q)[0][0].name == numpy_index.search(q)[0][0].name == st_index.search(q)[0][0].name
        for q in queries
    )
    score_diff = max(
        float(max(np.abs(onnx_index.scores(q) - st_index.scores(q)).max(), np.abs(numpy_index.scores(q) - st_index.scores(q)).max()))
        for q in queries
    )

    def ms(values: list[float]) -> float:
        return 1000 * statistics.median(values)

    print(f"candidates: {len(schemas)} APIs; {len(queries)} distinct queries; {os.cpu_count()} CPUs; threads: "
          f"{args.threads}; load average {load_before:.2f} before, {os.getloadavg()[0]:.2f} after")  # fmt: skip
    print(f"cold search in a new process, median of {args.cold_runs}: the process's wall time "
          "(in brackets: import apibank_lib + load the embedder, torch included + index + query)")  # fmt: skip
    for label in names:
        for state in ("cached", "empty"):
            runs = cold[label][state]
            phases = " + ".join(f"{ms([r[p] for r in runs]):.0f}" for p in ("import", "load", "index", "query"))
            cache_state = "API embeddings cached" if state == "cached" else "empty cache          "
            print(f"  {label:32s} {cache_state}: {ms([r['wall'] for r in runs]):6.0f} ms  ({phases} ms)")
    print("API-embedding build, warm process, median of 3:")
    for label in embedders:
        print(f"  {label:32s} {ms(build[label]):6.0f} ms")
    print("warm search, new query (embedded):")
    for label in embedders:
        p90 = 1000 * float(np.percentile(new[label], 90))
        print(f"  {label:32s} {ms(new[label]):6.2f} ms median, {p90:.2f} ms p90")
    print("warm search, repeated query (in-memory cache):")
    for label in embedders:
        print(f"  {label:32s} {ms(hit[label]):6.3f} ms median")
    onnx_ms, numpy_ms, st_ms = (ms(new[label]) for label in embedders)
    print(f"warm new-query latency against onnx: numpy {numpy_ms / onnx_ms:.2f}x, sentence-transformers {st_ms / onnx_ms:.2f}x")
    print(f"same top-1 API with all three for {top1_same}/{len(queries)} queries; largest score difference {score_diff:.1e}")
    print(f"target < {TARGET_MS} ms per warm new query (onnx, the default): {'met' if onnx_ms < TARGET_MS else 'NOT met'}")


if __name__ == "__main__":
    main()
