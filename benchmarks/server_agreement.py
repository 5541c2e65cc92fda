"""The same model two ways: embedded llama.cpp against llama-cpp-python's OpenAI-compatible server, both in chat mode.

Usage: .venv/bin/python benchmarks/server_agreement.py [N]   (default 6)

The server is started on loopback with the packaged Qwen2.5-Coder-0.5B-Instruct and no ``--chat_format``, so it
renders the GGUF's own chat template; both routes answer the first N level-1 API-call samples with tool_choice
``auto`` (that server does not honour ``required``), and the judgments are compared sample by sample. Printed per
sample: whether the judgments agree, how many API results the history holds, both prompts' token counts, and both
answers; then the count of agreeing judgments. The server runs first and is stopped before the embedded model
loads, so the two never share the cores.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from apibank_lib.core.types import ApiRecord  # noqa: E402
from apibank_lib.data.datasets import load_benchmark  # noqa: E402
from apibank_lib.env.protocols import V2  # noqa: E402
from apibank_lib.grading.grader import Grader  # noqa: E402
from apibank_lib.models.base import Request  # noqa: E402
from apibank_lib.models.llamacpp import LlamaCppBackend  # noqa: E402
from apibank_lib.models.openai_compat import OpenAIBackend  # noqa: E402
from apibank_lib.models.packaged import packaged_model_path  # noqa: E402
from apibank_lib.prompting.chat import build_chat  # noqa: E402
from apibank_lib.prompting.prompts import build_prompt  # noqa: E402
from apibank_lib.prompting.toolcalls import parse_tool_calls  # noqa: E402
from tests.helpers import llama_server  # noqa: E402

MODEL = "qwen2.5-coder-0.5b"


def main(n: int) -> None:
    bench = load_benchmark()
    toolset, grader = bench.toolset(1), Grader(bench, V2)
    samples = bench.samples(1, "api")[:n]
    requests = []
    for sample in samples:
        context = sample.context()
        chat = build_chat(context, toolset)
        requests.append(Request(build_prompt(context, toolset), context, sample, 128, None, "chat", chat, "auto"))
    with llama_server(packaged_model_path(MODEL), "--n_ctx", "4096") as base:
        http = OpenAIBackend("qwen", base, tool_choice="auto", timeout_s=300, check_tools=False)
        served = [http.complete(r) for r in requests]
    local = LlamaCppBackend(MODEL, threads=2)
    same = 0
    for sample, request, remote in zip(samples, requests, served, strict=True):
        here = local.complete(request)
        a = grader.judge_parsed(sample, parse_tool_calls(remote.text, remote.raw_tool_calls or None))
        b = grader.judge_parsed(sample, parse_tool_calls(here.text))
        agree = (a.correct, a.category, a.call_text) == (b.correct, b.category, b.call_text)
        same += agree
        results = sum(isinstance(t, ApiRecord) for t in sample.history)
        print(
            f"{'same' if agree else 'DIFFERENT'}  {sample.key}  earlier results: {results}  "
            f"prompt tokens server/embedded: {remote.prompt_tokens}/{here.prompt_tokens}\n"
            f"  server:   {(remote.text or str(remote.raw_tool_calls))[:100]!r}\n  embedded: {here.text[:100]!r}"
        )
    print(f"same judgments: {same} of {len(samples)}")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 6)
