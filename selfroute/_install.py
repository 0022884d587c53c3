"""The ``pip install`` line that adds an extra to *this* installation of selfroute.

selfroute is installed from a checkout (``pip install -e .``), from a built wheel, or from a
package index. ``pip install 'selfroute[EXTRA]'`` only works in the last case, so messages that
name a missing extra use the line that matches how this copy was installed.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from urllib.parse import unquote, urlsplit

__all__ = ["install_command"]

_ROOT = Path(__file__).resolve().parent.parent


def _checkout_root() -> Path | None:
    """The source checkout this package is imported from, if it is one."""
    pyproject = _ROOT / "pyproject.toml"
    try:
        text = pyproject.read_text(encoding="utf-8")
    except OSError:
        return None
    return _ROOT if 'name = "selfroute"' in text else None


def _installed_from() -> str | None:
    """The local file or folder pip installed selfroute from (PEP 610 ``direct_url.json``)."""
    try:
        from importlib.metadata import distribution

        raw = distribution("selfroute").read_text("direct_url.json")
    except Exception:  # not installed (a bare checkout on sys.path) or no metadata
        return None
    if not raw:
        return None
    try:
        url = str(json.loads(raw).get("url") or "")
    except ValueError:
        return None
    parts = urlsplit(url)
    return unquote(parts.path) if parts.scheme == "file" else (url or None)


def install_command(extra: str) -> str:
    """The ``pip install`` line adding ``extra`` to this installation.

    * imported from a checkout: ``pip install -e '.[EXTRA]'`` (the checkout's path when the working
      folder is elsewhere);
    * installed from a wheel file or a folder: ``pip install 'PATH[EXTRA]'``;
    * otherwise (from a package index): ``pip install 'selfroute[EXTRA]'``.
    """
    root = _checkout_root()
    if root is not None:
        try:
            here = Path(os.getcwd()).resolve() == root
        except OSError:
            here = False
        return f"pip install -e '{'.' if here else root}[{extra}]'"
    source = _installed_from()
    if source and source.endswith(".whl"):
        return f"pip install '{source}[{extra}]'"
    return f"pip install 'selfroute[{extra}]'"
