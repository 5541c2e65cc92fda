"""The sandbox: the 75 tool classes, their databases, one isolated episode of tool execution, and the grading
protocols that say how a call is parsed, converted, executed and checked.

* :mod:`~apibank_lib.env.tools`: one module per domain, ``level3/``, ``registry`` (the two tool sets).
* :mod:`~apibank_lib.env.sandbox`: ``Sandbox``, fresh state per sample.
* :mod:`~apibank_lib.env.protocols`: ``GradingProtocol``, ``PAPER``, ``V2``, ``get_protocol``.
* :mod:`~apibank_lib.env.databases`, :mod:`~apibank_lib.env.shapes`: database files checked against declared shapes.
"""

from apibank_lib.env.protocols import PAPER, PROTOCOLS, V2, GradingProtocol, StatePolicy, get_protocol
from apibank_lib.env.sandbox import Sandbox

__all__ = ["GradingProtocol", "StatePolicy", "PAPER", "V2", "PROTOCOLS", "get_protocol", "Sandbox"]
