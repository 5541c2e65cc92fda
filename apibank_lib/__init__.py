"""apibank_lib: the API-Bank tool-use benchmark, re-implemented as a small, fast library.

The public API a notebook needs, in one import::

    from apibank_lib import load_benchmark, Grader, V2, RunFolder

    bench = load_benchmark()                 # or load_benchmark("/path/to/api-bank")
    box = bench.sandbox(level=1)             # a fresh, isolated tool sandbox
    box.execute("[GetToday()]")
    df = RunFolder("runs/<folder>").to_frame()   # the judgments of a scored run
"""

from apibank_lib.core.calls import format_call, parse_calls
from apibank_lib.core.errors import (
    ApibankError,
    BackendError,
    CallError,
    ConfigError,
    DataError,
    ParseError,
    ToolError,
    ToolFailure,
)
from apibank_lib.core.types import (
    ApiCall,
    ApiCallSample,
    ApiRecord,
    ApiResult,
    Context,
    Dialogue,
    Episode,
    Level3Item,
    ResponseSample,
    Utterance,
)
from apibank_lib.core.version import __version__
from apibank_lib.data.datasets import Benchmark, cut_samples, load_benchmark, statistics
from apibank_lib.env.protocols import PAPER, PROTOCOLS, V2, GradingProtocol, StatePolicy, get_protocol
from apibank_lib.env.sandbox import Sandbox
from apibank_lib.grading.grader import EpisodeJudgment, Grader, Judgment
from apibank_lib.grading.replay import replay
from apibank_lib.grading.taxonomy import ErrorCategory
from apibank_lib.prompting.prompts import Prompt, build_prompt, target_text
from apibank_lib.runs.config import RunConfig
from apibank_lib.runs.folder import RunFolder
from apibank_lib.runs.records import JudgmentRecord, PredictionRecord
from apibank_lib.runs.runner import RunResult, RunStopped, run
from apibank_lib.runs.scoring import score_run

__all__ = [
    "__version__",
    # data
    "load_benchmark",
    "Benchmark",
    "cut_samples",
    "statistics",
    "Dialogue",
    "Utterance",
    "ApiRecord",
    "Level3Item",
    "ApiCallSample",
    "ResponseSample",
    "Episode",
    "Context",
    # calls and the sandbox
    "ApiCall",
    "ApiResult",
    "parse_calls",
    "format_call",
    "Sandbox",
    # grading
    "GradingProtocol",
    "StatePolicy",
    "PAPER",
    "V2",
    "PROTOCOLS",
    "get_protocol",
    "Grader",
    "Judgment",
    "EpisodeJudgment",
    "replay",
    "ErrorCategory",
    # prompts, runs and scoring
    "Prompt",
    "build_prompt",
    "target_text",
    "RunConfig",
    "run",
    "RunResult",
    "RunStopped",
    "RunFolder",
    "PredictionRecord",
    "JudgmentRecord",
    "score_run",
    # errors
    "ApibankError",
    "ParseError",
    "CallError",
    "ConfigError",
    "DataError",
    "BackendError",
    "ToolError",
    "ToolFailure",
]
