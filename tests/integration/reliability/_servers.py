"""The scripted OpenAI server used by the many-call reliability tests.

The support server already disables Nagle's algorithm (``_Handler.disable_nagle_algorithm``), so
200-call tests are not stalled by delayed ACKs; this name is kept for the tests that import it.
"""

from __future__ import annotations

from tests.support.openai_server import ScriptedOpenAIServer

__all__ = ["NoDelayOpenAIServer"]

NoDelayOpenAIServer = ScriptedOpenAIServer
