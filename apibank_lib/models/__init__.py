"""Model backends behind one protocol, chosen by name and loaded lazily.

Names: ``llamacpp:gemma-3-270m`` (embedded default), ``llamacpp:<file.gguf>``,
``openai:<model>@<base_url>``, ``hf:<dir or file.gguf or gemma-3-270m>``,
``oracle``, ``no-call``, ``heuristic``. A missing optional dependency only
matters when its backend is used.
"""

from apibank_lib.models.base import Backend, BackendError, Completion, Request
from apibank_lib.models.registry import BACKEND_KINDS, load_backend

__all__ = ["Backend", "BackendError", "Completion", "Request", "load_backend", "BACKEND_KINDS"]
