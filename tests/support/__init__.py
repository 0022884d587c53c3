"""Test infrastructure: scripted loopback model servers, a real Chroma server, client helpers.

See `tests.support.openai_server`, `tests.support.gemini_server`,
`tests.support.chroma_server`, `tests.support.clients` and `tests.support.fixtures`.
"""

__all__: list[str] = []
