"""What inspect_ai imports to find this package's tasks (the ``inspect_ai`` entry point in ``pyproject.toml``):
``inspect eval apibank_lib/api_bank``."""

from apibank_lib.integrations.inspect_task import api_bank

__all__ = ["api_bank"]
