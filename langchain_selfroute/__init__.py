"""LangChain adapter for selfroute (placeholder until the LangChain issue lands)."""

__all__: list[str] = []
