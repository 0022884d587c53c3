"""A scripted OpenAI server tuned for the many-call reliability tests."""

from __future__ import annotations

import contextlib
import socket

from tests.support.openai_server import ScriptedOpenAIServer

__all__ = ["NoDelayOpenAIServer"]


class NoDelayOpenAIServer(ScriptedOpenAIServer):
    """The scripted server with Nagle's algorithm off on accepted connections.

    The server writes headers and body separately; with Nagle on, the body waits for the client's
    delayed ACK (~40 ms per call on Linux), which makes 200-call tests slow. Falls back to the
    plain behaviour if the support server's connection hook changes.
    """

    def _track(self, conn: socket.socket, *, add: bool) -> None:
        if add:
            with contextlib.suppress(OSError):
                conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        super()._track(conn, add=add)
