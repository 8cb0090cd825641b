"""kiln.nn: layers that track their weights, as ``max.nn`` (``Module`` only:
kiln has none of MAX's prebuilt layers)."""

from .layer import Module

__all__ = ["Module"]
