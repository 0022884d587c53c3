"""Turning files into text: plain text, Markdown, HTML (the standard library's parser) and PDF
(pypdf).

Every failure is a :class:`~selfroute.stores.DocumentReadError` naming the file and the reason, so
callers can report it and move on to the next file.
"""

from __future__ import annotations

import codecs
import errno
import hashlib
import io
import logging
import os
import re
import stat
from dataclasses import dataclass
from html.parser import HTMLParser
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
_BLOCK_SET = frozenset(_BLOCK_TAGS)
_DROP_SET = frozenset(_DROP_TAGS)
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0e-\x1f\x7f-\x9f\ud800-\udfff]")
_SPACES = re.compile(r"[ \t\f\v\u00a0]+")
_BLANK_LINES = re.compile(r"\n{3,}")
_MD_HEADING = re.compile(r"^[ \t]{0,3}#[ \t]", re.MULTILINE)


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


def _decode_bytes(path: Path, data: bytes) -> str:
    """UTF-8 (a BOM allowed), else Windows-1252 -- decided for the file as a whole, on evidence.

    A UTF-8 file with a few bad bytes stays UTF-8 (each bad byte becomes U+FFFD): decoding it
    all as Windows-1252 would turn every ``é`` into ``Ã©``. A file is read as Windows-1252 only
    when its invalid bytes outnumber its valid multi-byte UTF-8 sequences.
    """
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError:
        pass
    loose = data.decode("utf-8-sig", errors="replace")
    bad = loose.count("\ufffd") - data.count("\ufffd".encode())
    multibyte = sum(1 for ch in loose if ord(ch) > 0x7F and ch != "\ufffd")
    if multibyte >= bad:
        return loose
    try:
        return data.decode("cp1252")
    except UnicodeDecodeError:
        raise _fail(path, "not text: neither UTF-8 nor Windows-1252") from None


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
    """The file's text, after checking the *whole* file for binary content.

    UTF-16 and UTF-32 text (by byte-order mark, or UTF-16 without one) is decoded as such.
    Otherwise binary sniffing covers every byte (a NUL anywhere) and, for every encoding, every
    8 KB window of the text (more than 1% control characters in any window), not just the first
    8 KB: a text header in front of a binary blob is still binary.
    """
    wide = _wide_encoding(data)
    if wide is not None:
        try:
            text = data.decode(wide)
        except UnicodeDecodeError:
            raise _fail(path, f"not text: looks like {wide.upper()} but does not decode") from None
    elif b"\x00" in data:
        raise _fail(path, "binary file (contains NUL bytes), skipped")
    else:
        text = _decode_bytes(path, data)
    for start in range(0, len(text), _SNIFF_BYTES):
        window = text[start : start + _SNIFF_BYTES]
        control = len(_CONTROL.findall(window))
        if control / len(window) > _CONTROL_SHARE:
            raise _fail(path, "binary file (control characters), skipped")
    return text.replace("\r\n", "\n").replace("\r", "\n")


def _tidy(text: str) -> str:
    lines = [_SPACES.sub(" ", line).strip() for line in text.split("\n")]
    return _BLANK_LINES.sub("\n\n", "\n".join(lines)).strip()


class _TextExtractor(HTMLParser):
    """One pass over the markup: text, with a newline around each block tag, minus scripts,
    styles and the other dropped elements. Linear in the input, whatever the nesting: no tree
    is built (a tree-based reader was quadratic on deeply nested markup)."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self.title: list[str] = []
        self._drop = 0
        self._in_title = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in _DROP_SET:
            self._drop += 1
        elif tag == "title":
            self._in_title = True
        elif tag in _BLOCK_SET and not self._drop:
            self.parts.append("\n")

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in _BLOCK_SET and not self._drop:
            self.parts.append("\n")

    def handle_endtag(self, tag: str) -> None:
        if tag in _DROP_SET:
            self._drop = max(0, self._drop - 1)
        elif tag == "title":
            self._in_title = False
        elif tag in _BLOCK_SET and not self._drop:
            self.parts.append("\n")

    def handle_data(self, data: str) -> None:
        if self._in_title:
            self.title.append(data)
        elif not self._drop:
            self.parts.append(data)


def _read_html(path: Path, data: bytes) -> tuple[str, str | None]:
    markup = _decode(path, data)
    parser = _TextExtractor()
    try:
        parser.feed(markup)
        parser.close()
    except Exception as exc:  # html.parser is lenient; anything it raises is a parse failure
        raise _fail(path, f"cannot parse HTML ({type(exc).__name__})") from exc
    title = " ".join(" ".join(parser.title).split())
    return _tidy("".join(parser.parts)), title or None


def _markdown_title(text: str) -> str | None:
    """The first level-1 ATX heading (``# Title #``), found in linear time (a backtracking
    pattern was cubic on a long line of spaces)."""
    for match in _MD_HEADING.finditer(text):
        end = text.find("\n", match.end())
        title = text[match.end() : end if end >= 0 else len(text)].strip().rstrip("#").strip()
        if title:
            return title
    return None


def _read_pdf(path: Path, data: bytes) -> tuple[str, str | None]:
    """The text and title of a PDF's bytes (read once, from the file opened without links)."""
    try:
        from pypdf import PdfReader
        from pypdf.errors import PdfReadError
    except ImportError as exc:  # pragma: no cover - pypdf is in the cli extra
        raise MissingDependencyError("pypdf", "cli") from exc
    pypdf_logger = logging.getLogger("pypdf")
    level = pypdf_logger.level
    pypdf_logger.setLevel(logging.ERROR)  # pypdf warns loudly about harmless quirks
    try:
        if not data.startswith(b"%PDF-"):
            raise _fail(path, "not a PDF file (no %PDF- header)")
        try:
            reader = PdfReader(io.BytesIO(data))
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


#: Flags of every document open: no controlling terminal, no blocking on a FIFO (refused as not
#: a regular file once open), closed in child processes.
_OPEN_FLAGS = (
    os.O_RDONLY
    | getattr(os, "O_CLOEXEC", 0)
    | getattr(os, "O_NOCTTY", 0)
    | getattr(os, "O_NONBLOCK", 0)
    | getattr(os, "O_BINARY", 0)
)


def _inside(path: str, root: Path) -> bool:
    return os.path.commonpath([path, str(root)]) == str(root)


def _opened_path(fd: int) -> str | None:
    """The real path of the open file ``fd`` (Linux ``/proc``; ``None`` where unknown)."""
    try:
        return os.readlink(f"/proc/self/fd/{fd}")
    except OSError:
        return None


def _open(p: Path, within: Path | None) -> int:
    """Open ``p`` for reading. With ``within``: the real path must be inside it at the moment of
    opening (a link resolved inside the folder is fine), the last component is opened without
    following a link (``O_NOFOLLOW``), and the opened file's own path is checked again.

    Raises:
        DocumentReadError: Missing, unreadable, or (with ``within``) now outside the folder.
    """
    target, flags = str(p), _OPEN_FLAGS
    root = Path(os.path.realpath(within)) if within is not None else None
    if root is not None:
        target = os.path.realpath(p)
        if not _inside(target, root):
            raise _fail(p, f"now a symbolic link to {target} outside {root}; not read")
        flags |= getattr(os, "O_NOFOLLOW", 0)
    try:
        fd = os.open(target, flags)
    except FileNotFoundError:
        raise _fail(p, "no such file") from None
    except PermissionError:
        raise _fail(p, "permission denied") from None
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise _fail(p, "became a symbolic link while indexing; not read") from None
        raise _fail(p, f"cannot access ({exc.strerror or exc})") from exc
    if root is not None:
        opened = _opened_path(fd)
        if opened is not None and not _inside(opened, root):
            os.close(fd)
            raise _fail(p, f"now a symbolic link to {opened} outside {root}; not read")
    return fd


def _read_fd(p: Path, fd: int, max_bytes: int | None) -> tuple[bytes, os.stat_result]:
    """The bytes of the open regular file ``fd`` (closed on return) and its status."""
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise _fail(p, "not a regular file")
    except BaseException:
        os.close(fd)
        raise
    with os.fdopen(fd, "rb") as fh:
        if max_bytes is not None and st.st_size > max_bytes:
            raise _fail(p, f"file is {st.st_size:,} bytes, over the limit of {max_bytes:,}")
        try:
            data = fh.read() if max_bytes is None else fh.read(max_bytes + 1)
        except PermissionError:
            raise _fail(p, "permission denied") from None
        except OSError as exc:
            raise _fail(p, f"cannot read ({exc.strerror or exc})") from exc
    if max_bytes is not None and len(data) > max_bytes:  # grew after the fstat
        raise _fail(p, f"file is over the limit of {max_bytes:,} bytes")
    return data, st


def read_document(
    path: str | os.PathLike[str],
    *,
    max_bytes: int | None = DEFAULT_MAX_FILE_BYTES,
    within: str | os.PathLike[str] | None = None,
) -> LoadedDocument:
    """Read a ``.txt``, ``.md``, ``.html`` or ``.pdf`` file into text.

    The file is opened once and everything (size, type, bytes, a PDF's pages) is read from that
    open file, so what is checked is what is read.

    Args:
        path: The file.
        max_bytes: Refuse files larger than this (``None``: no limit).
        within: A folder the file must be inside when it is opened, after resolving links (a
            file found by walking a folder): a file swapped for a link out of it since is not
            read, nor one whose last component became a link.

    Returns:
        The :class:`LoadedDocument`.

    Raises:
        DocumentReadError: Missing, not a regular file, unreadable, too large, unsupported type,
            binary, undecodable, unparsable or empty (white space only), or (``within``) not
            inside the folder any more.
    """
    p = Path(path)
    fmt = SUPPORTED_SUFFIXES.get(p.suffix.lower())
    if fmt is None:
        kind = p.suffix or "(no suffix)"
        raise _fail(
            p,
            f"unsupported file type {kind}; supported: {', '.join(sorted(SUPPORTED_SUFFIXES))}",
        )
    data, st = _read_fd(p, _open(p, Path(within) if within is not None else None), max_bytes)
    if not data.strip():
        raise _fail(p, "empty file")
    title: str | None = None
    if fmt == "pdf":
        text, title = _read_pdf(p, data)
    elif fmt == "html":
        text, title = _read_html(p, data)
    else:
        text = _decode(p, data)
        if fmt == "markdown":
            title = _markdown_title(text)
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
