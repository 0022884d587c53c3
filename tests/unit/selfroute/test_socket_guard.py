"""Unit tests run offline: only loopback connections are allowed (pytest-socket)."""

from __future__ import annotations

import socket

import pytest_socket


def test_connect_is_guarded() -> None:
    # pytest-socket replaces socket.connect with a guard that refuses non-loopback hosts; the
    # guard refuses before any packet is sent, so no outside address is ever contacted.
    assert socket.socket.connect is not pytest_socket._true_connect


def test_loopback_is_allowed() -> None:
    server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    server.bind(("127.0.0.1", 0))
    server.listen(1)
    port = server.getsockname()[1]
    client = socket.create_connection(("127.0.0.1", port), timeout=2)
    client.close()
    server.close()
