"""Turning files into text: plain text, Markdown, HTML (BeautifulSoup) and PDF (pypdf).

Every failure is a :class:`~selfroute.stores.DocumentReadError` naming the file and the reason, so
callers can report it and move on to the next file.
"""

from __future__ import annotations

import codecs
import hashlib
import logging
import os
import re
import unicodedata
from dataclasses import dataclass
from pathlib import Path

from selfroute._chunking import document_id
from selfroute._errors import MissingDependencyError
from selfroute.stores._errors import DocumentReadError

__all__ = [
    "DEFAULT_MAX_FILE_BYTES",
    "SUPPORTED_SUFFIXES",
    "LoadedDocument",
    "read_document",
]

#: File suffix -> format name.
SUPPORTED_SUFFIXES: dict[str, str] = {
    ".txt": "text",
    ".text": "text",
    ".md": "markdown",
    ".markdown": "markdown",
    ".html": "html",
    ".htm": "html",
    ".pdf": "pdf",
}

#: Files larger than this are skipped (override with ``max_bytes``).
DEFAULT_MAX_FILE_BYTES = 100 * 1024 * 1024

_SNIFF_BYTES = 8192
_CONTROL_SHARE = 0.01  # more control characters than this means "binary"
_BLOCK_TAGS = (
    "address",
    "article",
    "aside",
    "blockquote",
    "br",
    "dd",
    "div",
    "dl",
    "dt",
    "figcaption",
    "figure",
    "footer",
    "h1",
    "h2",
    "h3",
    "h4",
    "h5",
    "h6",
    "header",
    "hr",
    "li",
    "main",
    "nav",
    "ol",
    "p",
    "pre",
    "section",
    "table",
    "td",
    "th",
    "tr",
    "ul",
)
_DROP_TAGS = ("script", "style", "noscript", "template", "svg", "head", "iframe", "object")
_SPACES = re.compile(r"[ \t\f\v\u00a0]+")
_BLANK_LINES = re.compile(r"\n{3,}")
_MD_TITLE = re.compile(r"^\s{0,3}#\s+(.+?)\s*#*\s*$", re.MULTILINE)


@dataclass(frozen=True)
class LoadedDocument:
    """A file read into text.

    Attributes:
        path: The file, as given or found (absolute).
        text: Its text (newlines normalised to ``\\n``).
        format: ``text``, ``markdown``, ``html`` or ``pdf``.
        sha256: SHA-256 of the file's bytes.
        size: Size in bytes.
        mtime_ns: Modification time in nanoseconds.
        title: A title (HTML ``<title>``, first Markdown heading, PDF metadata, else the name).
    """

    path: Path
    text: str
    format: str
    sha256: str
    size: int
    mtime_ns: int
    title: str

    @property
    def doc_id(self) -> str:
        """Content hash of the text (:func:`selfroute.document_id`): the document's id."""
        return document_id(self.text)

    @property
    def words(self) -> int:
        """Number of white-space separated words."""
        return len(self.text.split())


def _fail(path: Path, reason: str) -> DocumentReadError:
    return DocumentReadError(str(path), reason)


# UTF-32 first: its little-endian byte-order mark starts with UTF-16's.
_BOMS = (
    (codecs.BOM_UTF32_LE, "utf-32"),
    (codecs.BOM_UTF32_BE, "utf-32"),
    (codecs.BOM_UTF16_LE, "utf-16"),
    (codecs.BOM_UTF16_BE, "utf-16"),
)


def _wide_encoding(data: bytes) -> str | None:
    """UTF-16/32 by byte-order mark, or UTF-16 without one (text whose every other byte is NUL:
    Windows' "Unicode" text files); ``None`` for anything else."""
    for bom, encoding in _BOMS:
        if data.startswith(bom):
            return encoding
    head = data[: _SNIFF_BYTES - _SNIFF_BYTES % 2]
    if len(head) < 4:
        return None
    even, odd = head[0::2].count(0), head[1::2].count(0)
    half = len(head) // 2
    if odd >= 0.3 * half and even == 0:
        return "utf-16-le"
    if even >= 0.3 * half and odd == 0:
        return "utf-16-be"
    return None


def _decode(path: Path, data: bytes) -> str:
    wide = _wide_encoding(data)
    if wide is not None:
        try:
            return _checked_text(path, data.decode(wide))
        except UnicodeDecodeError:
            raise _fail(path, f"not text: looks like {wide.upper()} but does not decode") from None
    if b"\x00" in data[:_SNIFF_BYTES]:
        raise _fail(path, "binary file (contains NUL bytes), skipped")
    for encoding in ("utf-8-sig", "cp1252"):
        try:
            text = data.decode(encoding)
            break
        except UnicodeDecodeError:
            continue
    else:
        raise _fail(path, "not text: neither UTF-8, UTF-16 nor Windows-1252")
    return _checked_text(path, text)


def _checked_text(path: Path, text: str) -> str:
    """``text`` with normalised line ends, unless it is mostly control characters (binary)."""
    sample = text[:_SNIFF_BYTES]
    control = sum(
        1 for ch in sample if ch not in "\n\r\t\f" and unicodedata.category(ch) in ("Cc", "Cs")
    )
    if sample and control / len(sample) > _CONTROL_SHARE:
        raise _fail(path, "binary file (control characters), skipped")
    return text.replace("\r\n", "\n").replace("\r", "\n")


def _tidy(text: str) -> str:
    lines = [_SPACES.sub(" ", line).strip() for line in text.split("\n")]
    return _BLANK_LINES.sub("\n\n", "\n".join(lines)).strip()


def _read_html(path: Path, data: bytes) -> tuple[str, str | None]:
    try:
        from bs4 import BeautifulSoup
    except ImportError as exc:  # pragma: no cover - bs4 is in the cli extra
        raise MissingDependencyError("beautifulsoup4", "cli") from exc
    markup = _decode(path, data)
    soup = BeautifulSoup(markup, "html.parser")
    title_tag = soup.find("title")
    title = title_tag.get_text(" ", strip=True) if title_tag is not None else None
    for tag in soup.find_all(_DROP_TAGS):
        tag.decompose()
    for tag in soup.find_all(_BLOCK_TAGS):
        tag.insert_before("\n")
        tag.insert_after("\n")
    return _tidy(soup.get_text()), title or None


def _read_pdf(path: Path) -> tuple[str, str | None]:
    try:
        from pypdf import PdfReader
        from pypdf.errors import PdfReadError
    except ImportError as exc:  # pragma: no cover - pypdf is in the cli extra
        raise MissingDependencyError("pypdf", "cli") from exc
    pypdf_logger = logging.getLogger("pypdf")
    level = pypdf_logger.level
    pypdf_logger.setLevel(logging.ERROR)  # pypdf warns loudly about harmless quirks
    try:
        with path.open("rb") as fh:
            if not fh.read(5).startswith(b"%PDF-"):
                raise _fail(path, "not a PDF file (no %PDF- header)")
        try:
            reader = PdfReader(str(path))
            if reader.is_encrypted and not reader.decrypt(""):
                raise _fail(path, "encrypted PDF (a password is required), skipped")
            pages = [page.extract_text() or "" for page in reader.pages]
            title = None
            if reader.metadata is not None and reader.metadata.title:
                title = str(reader.metadata.title).strip() or None
        except DocumentReadError:
            raise
        except (PdfReadError, ValueError, KeyError, TypeError, OSError) as exc:
            raise _fail(path, f"cannot parse PDF ({exc})") from exc
        except Exception as exc:  # pypdf may raise anything on a malformed file
            if "password" in str(exc).lower() or "crypt" in type(exc).__name__.lower():
                raise _fail(path, f"encrypted PDF ({exc})") from exc
            raise _fail(path, f"cannot parse PDF ({type(exc).__name__}: {exc})") from exc
    finally:
        pypdf_logger.setLevel(level)
    text = _tidy("\n\n".join(p.replace("\r\n", "\n") for p in pages))
    if not text:
        raise _fail(path, "no extractable text in PDF (scanned images? run OCR first)")
    return text, title


def read_document(
    path: str | os.PathLike[str], *, max_bytes: int | None = DEFAULT_MAX_FILE_BYTES
) -> LoadedDocument:
    """Read a ``.txt``, ``.md``, ``.html`` or ``.pdf`` file into text.

    Args:
        path: The file.
        max_bytes: Refuse files larger than this (``None``: no limit).

    Returns:
        The :class:`LoadedDocument`.

    Raises:
        DocumentReadError: Missing, not a regular file, unreadable, too large, unsupported type,
            binary, undecodable, unparsable or empty (white space only).
    """
    p = Path(path)
    fmt = SUPPORTED_SUFFIXES.get(p.suffix.lower())
    if fmt is None:
        kind = p.suffix or "(no suffix)"
        raise _fail(
            p,
            f"unsupported file type {kind}; supported: {', '.join(sorted(SUPPORTED_SUFFIXES))}",
        )
    try:
        st = p.stat()
    except FileNotFoundError:
        raise _fail(p, "no such file") from None
    except OSError as exc:
        raise _fail(p, f"cannot access ({exc.strerror or exc})") from exc
    if not p.is_file():
        raise _fail(p, "not a regular file")
    if max_bytes is not None and st.st_size > max_bytes:
        raise _fail(p, f"file is {st.st_size:,} bytes, over the limit of {max_bytes:,}")
    try:
        data = p.read_bytes()
    except PermissionError:
        raise _fail(p, "permission denied") from None
    except OSError as exc:
        raise _fail(p, f"cannot read ({exc.strerror or exc})") from exc
    if not data.strip():
        raise _fail(p, "empty file")
    title: str | None = None
    if fmt == "pdf":
        text, title = _read_pdf(p)
    elif fmt == "html":
        text, title = _read_html(p, data)
    else:
        text = _decode(p, data)
        if fmt == "markdown":
            match = _MD_TITLE.search(text)
            title = match.group(1).strip() if match else None
    if not text.strip():
        raise _fail(p, "no text (empty after extraction)")
    return LoadedDocument(
        path=p,
        text=text,
        format=fmt,
        sha256=hashlib.sha256(data).hexdigest(),
        size=st.st_size,
        mtime_ns=st.st_mtime_ns,
        title=title or p.stem,
    )
