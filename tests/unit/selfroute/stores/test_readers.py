"""File readers: each format, and each kind of bad file reported by name."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pytest

import selfroute as sr
from selfroute.stores import SUPPORTED_SUFFIXES, DocumentReadError, read_document
from tests.unit.selfroute.stores.pdf_writer import write_pdf

FIXTURES = Path(__file__).parents[3] / "fixtures" / "docs"


def test_plain_text_keeps_text_and_normalises_newlines(tmp_path: Path) -> None:
    f = tmp_path / "notes.txt"
    f.write_bytes(b"\xef\xbb\xbfFirst line\r\nsecond line\rthird\n")
    doc = read_document(f)
    assert doc.text == "First line\nsecond line\nthird\n"
    assert doc.format == "text"
    assert doc.title == "notes"
    assert doc.size == f.stat().st_size
    assert doc.sha256 == hashlib.sha256(f.read_bytes()).hexdigest()
    assert doc.doc_id == sr.document_id(doc.text)
    assert doc.words == 5


def test_windows_1252_text_is_decoded(tmp_path: Path) -> None:
    f = tmp_path / "latin.txt"
    f.write_bytes("Caf\u00e9 cr\u00e8me \u2013 na\u00efve".encode("cp1252"))
    assert read_document(f).text == "Caf\u00e9 cr\u00e8me \u2013 na\u00efve"


def test_markdown_title_is_the_first_heading(tmp_path: Path) -> None:
    f = tmp_path / "readme.md"
    f.write_text("Intro text\n\n# The Real Title #\n\nBody\n", encoding="utf-8")
    doc = read_document(f)
    assert doc.format == "markdown"
    assert doc.title == "The Real Title"
    assert "Intro text" in doc.text


def test_html_drops_scripts_and_keeps_blocks_apart(tmp_path: Path) -> None:
    f = tmp_path / "page.HTML"
    f.write_text(
        "<html><head><title> Grey Point </title><style>p{color:red}</style></head><body>"
        "<script>var secret = 1;</script><h1>Lighthouse</h1><p>Mara <b>Holt</b> kept the "
        "lamp.</p><p>She retired&nbsp;in 1947.</p><ul><li>one</li><li>two</li></ul></body></html>",
        encoding="utf-8",
    )
    doc = read_document(f)
    assert doc.format == "html"
    assert doc.title == "Grey Point"
    assert "secret" not in doc.text and "color" not in doc.text
    assert "Mara Holt kept the lamp." in doc.text  # inline tags do not split sentences
    assert doc.text.splitlines() == [
        "Lighthouse",
        "",
        "Mara Holt kept the lamp.",
        "",
        "She retired in 1947.",
        "",
        "one",
        "",
        "two",
    ]


def test_pdf_text_and_title_come_from_pypdf(tmp_path: Path) -> None:
    paragraphs = [f"Paragraph {i} says the passkey is {1000 + i}." for i in range(120)]
    f = write_pdf(tmp_path / "report.pdf", paragraphs, title="Quarterly report")
    doc = read_document(f)
    assert doc.format == "pdf"
    assert doc.title == "Quarterly report"
    for i in (0, 60, 119):  # several pages
        assert f"the passkey is {1000 + i}." in doc.text


def test_vendored_fixture_documents_all_read() -> None:
    docs = {p.name: read_document(p) for p in sorted(FIXTURES.iterdir())}
    assert set(docs) == {
        "1973_oil_crisis.html",
        "christmas_carol_stave_one.txt",
        "packet_switching.pdf",
        "sc_lstm_paper_excerpt.md",
    }
    assert "proclaimed an oil embargo" in docs["1973_oil_crisis.html"].text
    assert "Paul Baran" in docs["packet_switching.pdf"].text
    assert docs["sc_lstm_paper_excerpt.md"].title.startswith("Semantically Conditioned LSTM")
    assert all(d.words > 400 for d in docs.values())


@pytest.mark.parametrize(
    ("name", "content", "reason"),
    [
        ("empty.txt", b"", "empty file"),
        ("blank.md", b"  \n\t\n", "empty file"),
        ("binary.txt", b"abc\x00\x01\x02def" * 10, "binary file"),
        ("control.txt", b"ok " + bytes(range(1, 9)) * 50, "binary file"),
        ("image.png", b"\x89PNG....", "unsupported file type .png"),
        ("Makefile", b"all:\n", "unsupported file type (no suffix)"),
        ("fake.pdf", b"this is not a pdf", "not a PDF file"),
        ("broken.pdf", b"%PDF-1.4\n garbage without objects", "PDF"),
        ("only_tags.html", b"<html><body><script>x()</script></body></html>", "no text"),
    ],
)
def test_bad_files_are_reported_by_name(
    tmp_path: Path, name: str, content: bytes, reason: str
) -> None:
    f = tmp_path / name
    f.write_bytes(content)
    with pytest.raises(DocumentReadError) as info:
        read_document(f)
    assert info.value.path == str(f)
    assert reason in info.value.reason
    assert str(f) in str(info.value)
    assert isinstance(info.value, sr.InvalidInputError)


def test_pdf_without_text_is_reported(tmp_path: Path) -> None:
    f = write_pdf(tmp_path / "scan.pdf", [])
    with pytest.raises(DocumentReadError, match="no extractable text"):
        read_document(f)


def test_missing_file_and_directory(tmp_path: Path) -> None:
    with pytest.raises(DocumentReadError, match="no such file"):
        read_document(tmp_path / "gone.txt")
    folder = tmp_path / "folder.md"
    folder.mkdir()
    with pytest.raises(DocumentReadError, match="not a regular file"):
        read_document(folder)


def test_too_large_file_is_skipped(tmp_path: Path) -> None:
    f = tmp_path / "big.txt"
    f.write_text("word " * 1000, encoding="utf-8")
    with pytest.raises(DocumentReadError, match="over the limit"):
        read_document(f, max_bytes=100)
    assert read_document(f, max_bytes=None).words == 1000


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() == 0, reason="root reads anything")
def test_unreadable_file(tmp_path: Path) -> None:
    f = tmp_path / "secret.txt"
    f.write_text("hidden", encoding="utf-8")
    f.chmod(0)
    try:
        with pytest.raises(DocumentReadError, match="permission denied"):
            read_document(f)
    finally:
        f.chmod(0o600)


def test_supported_suffixes_cover_the_documented_formats() -> None:
    assert {".txt", ".md", ".html", ".pdf"} <= set(SUPPORTED_SUFFIXES)


def test_permission_error_is_reported(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    f = tmp_path / "locked.txt"
    f.write_text("text", encoding="utf-8")

    from selfroute.stores import _readers

    def denied(path: str, flags: int, *args: object) -> int:
        raise PermissionError(13, "Permission denied", path)

    monkeypatch.setattr(_readers.os, "open", denied)
    with pytest.raises(DocumentReadError, match="permission denied"):
        read_document(f)


@pytest.mark.parametrize("encoding", ["utf-16", "utf-16-le", "utf-16-be", "utf-32"])
def test_utf16_and_utf32_text_is_decoded(tmp_path: Path, encoding: str) -> None:
    """Issue 17: Windows' "Unicode" text files (UTF-16, with or without a byte-order mark)."""
    text = "Mara Holt kept the lamp at Grey Point.\r\nShe was born in Dunmore — in 1901.\n"
    path = tmp_path / f"notes-{encoding}.txt"
    path.write_bytes(text.encode(encoding))
    doc = read_document(path)
    assert doc.text.strip() == text.replace("\r\n", "\n").strip()
    html = tmp_path / "page.html"
    html.write_bytes("<html><body><p>Grey Point lamp</p></body></html>".encode("utf-16"))
    assert read_document(html).text.strip() == "Grey Point lamp"


def test_binary_with_nul_bytes_is_still_refused(tmp_path: Path) -> None:
    path = tmp_path / "blob.txt"
    path.write_bytes(bytes(range(256)) * 8)
    with pytest.raises(DocumentReadError, match="binary"):
        read_document(path)
