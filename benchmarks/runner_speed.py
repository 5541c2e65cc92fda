"""Runner overhead, concurrency speed-up and the embedded model's speed, measured in one run.

Usage: .venv/bin/python benchmarks/runner_speed.py [--samples N] [--skip-model]

1. Overhead per sample, model time excluded: the runner with an instant
   backend (the no-call baseline) over N samples: prompt building, the
   backend call, appending and flushing a JSON line. Target: under 2 ms.
2. Concurrency: the OpenAI-compatible backend against a local HTTP server that
   answers each request after 100 ms, with --concurrency 8 versus 1.
   Target: at least 6x the throughput.
3. The embedded model (llamacpp:gemma-3-270m, 2 threads): seconds per sample
   on the first level-1 samples (API-call and response).
"""

from __future__ import annotations

import argparse
import http.server
import json
import tempfile
import threading
import time
from pathlib import Path

from apibank_lib.data.datasets import load_benchmark
from apibank_lib.models.baselines import NoCallBackend
from apibank_lib.models.openai_compat import OpenAIBackend
from apibank_lib.runs.config import RunConfig
from apibank_lib.runs.runner import run

DELAY_S = 0.1


class SlowServer(http.server.BaseHTTPRequestHandler):
    """An OpenAI-compatible chat endpoint that answers every request after 100 ms."""

    protocol_version = "HTTP/1.1"

    def do_POST(self) -> None:  # noqa: N802
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        time.sleep(DELAY_S)
        payload = json.dumps({"choices": [{"message": {"content": "[GetToday()]"}}], "usage": {"prompt_tokens": 1, "completion_tokens": 1}}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, *args: object) -> None:
        pass


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=200)
    parser.add_argument("--skip-model", action="store_true")
    args = parser.parse_args()
    bench = load_benchmark()
    tmp = Path(tempfile.mkdtemp(prefix="apibank-runner-bench-"))

    # 1. overhead
    n = args.samples
    cfg = RunConfig("no-call", levels=(1, 2), limit=n // 2, out=str(tmp / "overhead"))
    res = run(cfg, backend=NoCallBackend(), bench=bench, progress=False)
    overhead_ms = 1000 * res.elapsed_s / res.answered
    print(f"runner overhead (instant backend, {res.answered} samples): {overhead_ms:.3f} ms per sample; target < 2 ms: {'met' if overhead_ms < 2 else 'NOT met'}")

    # 2. concurrency against a 100 ms server
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), SlowServer)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    base = f"http://127.0.0.1:{srv.server_address[1]}/v1"
    timings = {}
    for workers in (1, 8):
        backend = OpenAIBackend("stub", base, timeout_s=10)
        cfg = RunConfig("openai:stub", levels=(1,), limit=48, out=str(tmp / f"conc{workers}"), concurrency=workers)
        res = run(cfg, backend=backend, bench=bench, progress=False)
        timings[workers] = res.answered / res.elapsed_s
    srv.shutdown()
    ratio = timings[8] / timings[1]
    print(f"throughput vs a 100 ms server: {timings[1]:.1f} samples/s with concurrency 1, {timings[8]:.1f} with 8: {ratio:.1f}x; target >= 6x: {'met' if ratio >= 6 else 'NOT met'}")

    # 3. the embedded model
    if not args.skip_model:
        from apibank_lib.models import load_backend

        backend = load_backend("llamacpp:gemma-3-270m", threads=2)
        cfg = RunConfig("llamacpp:gemma-3-270m", levels=(1,), limit=20, out=str(tmp / "gemma"))
        res = run(cfg, backend=backend, bench=bench, progress=False)
        recs = [json.loads(x) for x in (tmp / "gemma" / "predictions.jsonl").read_text().splitlines()]
        api = [r["latency_s"] for r in recs if r["kind"] == "api" and not r.get("reused")]
        resp = [r["latency_s"] for r in recs if r["kind"] == "response"]
        print(f"embedded Gemma 3 270M (llama.cpp, 2 threads, load {backend.load_s:.1f} s): {res.elapsed_s / res.answered:.2f} s per sample over {res.answered} level-1 samples "
              f"(API-call {sum(api) / max(1, len(api)):.2f} s, response {sum(resp) / max(1, len(resp)):.2f} s)")


if __name__ == "__main__":
    main()
