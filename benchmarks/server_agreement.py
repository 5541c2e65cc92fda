"""The same model two ways: embedded llama.cpp against llama-cpp-python's OpenAI-compatible server, both in chat mode.

Usage: .venv/bin/python benchmarks/server_agreement.py N

The server is started on loopback with the packaged Qwen2.5-Coder-0.5B-Instruct and no --chat_format, so it renders
the GGUF's own chat template; both routes answer the first N level-1 API-call samples with tool_choice "auto"
(that server does not honour "required"), and the judgments are compared sample by sample. Printed per sample:
whether the judgments agree, both prompts' token counts, and both answers.
"""
import json, socket, subprocess, sys, time
import httpx
from apibank_lib.backends.llamacpp import LlamaCppBackend
from apibank_lib.backends.openai_compat import OpenAIBackend
from apibank_lib.backends.base import Request
from apibank_lib.chat import build_chat
from apibank_lib.datasets import load_benchmark
from apibank_lib.prompts import build_prompt
from apibank_lib.grading import Grader
from apibank_lib.protocols import V2
from apibank_lib.toolcalls import parse_tool_calls
from apibank_lib.packaged_models import packaged_model_path
N = int(sys.argv[1])
s = socket.socket(); s.bind(("127.0.0.1", 0)); port = s.getsockname()[1]; s.close()
path = packaged_model_path("qwen2.5-coder-0.5b")
proc = subprocess.Popen([sys.executable, "-m", "llama_cpp.server", "--model", str(path), "--host", "127.0.0.1", "--port", str(port), "--n_ctx", "4096", "--n_threads", "2"], stdout=open("/tmp/srv.log","w"), stderr=subprocess.STDOUT)
base = f"http://127.0.0.1:{port}/v1"
for _ in range(180):
    try:
        if httpx.get(base + "/models", timeout=2).status_code == 200: break
    except httpx.HTTPError: time.sleep(0.5)
bench = load_benchmark(); ts = bench.toolset(1); g = Grader(bench, V2)
http = OpenAIBackend("qwen", base, tool_choice="auto", timeout_s=300, check_tools=False)
rows = []
samples = bench.samples(1, "api")[:N]
for s in samples:
    ctx = s.context(); chat = build_chat(ctx, ts)
    req = Request(build_prompt(ctx, ts), ctx, s, 128, None, "chat", chat, "auto")
    c = http.complete(req)
    rows.append((s, c))
proc.terminate(); proc.wait(30)
local = LlamaCppBackend("qwen2.5-coder-0.5b", threads=2)
same = 0
for s, c in rows:
    ctx = s.context(); chat = build_chat(ctx, ts)
    req = Request(build_prompt(ctx, ts), ctx, s, 128, None, "chat", chat, "auto")
    l = local.complete(req)
    jh = g.judge_parsed(s, parse_tool_calls(c.text, c.raw_tool_calls or None)); jl = g.judge_parsed(s, parse_tool_calls(l.text))
    eq = (jh.correct, jh.category, jh.call_text) == (jl.correct, jl.category, jl.call_text)
    same += eq
    print(eq, "tokens http/local", c.prompt_tokens, l.prompt_tokens, "|", repr(c.text[:90]), c.raw_tool_calls[:1], "|", repr(l.text[:90]))
print("same judgments", same, "/", len(rows))
