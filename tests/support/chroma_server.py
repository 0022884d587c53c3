"""A real ``chroma run`` server process on 127.0.0.1 for integration tests."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

__all__ = ["ChromaServer", "chroma_executable", "free_port"]


def free_port() -> int:
    """A currently free TCP port on 127.0.0.1."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def chroma_executable() -> str:
    """The ``chroma`` CLI installed next to the running interpreter (or on ``PATH``)."""
    candidate = Path(sys.executable).parent / "chroma"
    if candidate.exists():
        return str(candidate)
    found = shutil.which("chroma")
    if found is None:
        raise FileNotFoundError("the `chroma` executable (pip install chromadb) was not found")
    return found


class ChromaServer:
    """Start ``chroma run --path DIR --port P`` and stop it on exit.

    Args:
        path: Persistence directory (a temporary one, removed on stop, when ``None``).
        port: Port (a free one when ``None``).
        startup_timeout_s: How long to wait for ``/api/v2/heartbeat``.

    Attributes:
        host: ``"127.0.0.1"``.
        port: The server port.
        url: ``http://127.0.0.1:PORT``.
    """

    host = "127.0.0.1"

    def __init__(
        self,
        path: str | os.PathLike[str] | None = None,
        *,
        port: int | None = None,
        startup_timeout_s: float = 60.0,
    ) -> None:
        self._own_dir = path is None
        self.path = Path(path) if path is not None else None
        self.port = port or free_port()
        self.startup_timeout_s = startup_timeout_s
        self._proc: subprocess.Popen[bytes] | None = None
        self._log: Any = None

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    def _heartbeat(self) -> bool:
        try:
            with urllib.request.urlopen(f"{self.url}/api/v2/heartbeat", timeout=1) as resp:
                return bool(resp.status == 200)
        except (urllib.error.URLError, OSError):
            return False

    def start(self) -> ChromaServer:
        if self._proc is not None:
            return self
        if self.path is None:
            self.path = Path(tempfile.mkdtemp(prefix="selfroute-chroma-"))
        self.path.mkdir(parents=True, exist_ok=True)
        env = {**os.environ, "ANONYMIZED_TELEMETRY": "False", "CHROMA_TELEMETRY": "False"}
        self._log = tempfile.TemporaryFile()  # noqa: SIM115 - open for the process lifetime
        self._proc = subprocess.Popen(
            [
                chroma_executable(),
                "run",
                "--path",
                str(self.path),
                "--host",
                self.host,
                "--port",
                str(self.port),
            ],
            stdout=self._log,
            stderr=subprocess.STDOUT,
            env=env,
        )
        deadline = time.monotonic() + self.startup_timeout_s
        while time.monotonic() < deadline:
            if self._proc.poll() is not None:
                output = self._read_log()
                self.stop()
                raise RuntimeError(f"chroma run exited early:\n{output}")
            if self._heartbeat():
                return self
            time.sleep(0.1)
        output = self._read_log()
        self.stop()
        raise TimeoutError(
            f"chroma server did not answer within {self.startup_timeout_s}s\n{output}"
        )

    def _read_log(self) -> str:
        if self._log is None:
            return ""
        self._log.seek(0)
        return bytes(self._log.read()).decode(errors="replace")[-4000:]

    def log_tail(self) -> str:
        """The end of the server's output so far, labelled (for a failing test's message)."""
        return "chroma server log (tail):\n" + self._read_log()

    def client(self, **settings: Any) -> Any:
        """A ``chromadb.HttpClient`` for this server (telemetry off)."""
        import chromadb
        from chromadb.config import Settings

        return chromadb.HttpClient(
            host=self.host,
            port=self.port,
            settings=Settings(anonymized_telemetry=False, **settings),
        )

    def peak_rss_mb(self) -> float:
        """The server process's peak resident memory (MB; Linux ``/proc``, else 0)."""
        if self._proc is None:
            return 0.0
        try:
            with open(f"/proc/{self._proc.pid}/status", encoding="ascii") as status:
                for line in status:
                    if line.startswith("VmHWM:"):
                        return int(line.split()[1]) / 1024
        except OSError:
            pass
        return 0.0

    def stop(self) -> None:
        proc, self._proc = self._proc, None
        if proc is not None and proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=10)
        if self._log is not None:
            self._log.close()
            self._log = None
        if self._own_dir and self.path is not None:
            shutil.rmtree(self.path, ignore_errors=True)
            self.path = None

    def __enter__(self) -> ChromaServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
