"""LlamaIndex adapter for selfroute (placeholder until the LlamaIndex issue lands)."""

__all__: list[str] = []
