"""Issue 16, findings 9 and 14: readers decode on evidence, sniff the whole file, stay linear.

* One non-UTF-8 byte in a UTF-8 file used to decode the *whole file* as Windows-1252
  (``Café`` -> ``CafÃ©``); now the file stays UTF-8 and only the bad byte is replaced.
* Binary sniffing read only the first 8 KB: a text header in front of a binary blob was indexed.
* ``_read_html`` was quadratic on nested markup (a 2 MB nested file stalled ``index`` for about
  an hour) and the Markdown title pattern was cubic on a long line of spaces. Both are linear
  now; ``benchmarks/bench_indexing.py`` measures the HTML reader's time per KB at 22 KB and
  2.2 MB as a ratio (linear = 1.0). The tests here bound nothing by time except a hang guard.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from selfroute.stores import DocumentReadError
from selfroute.stores._readers import read_document


def _write(tmp_path: Path, name: str, data: bytes) -> Path:
    path = tmp_path / name
    path.write_bytes(data)
    return path


def test_one_bad_byte_keeps_a_utf8_file_utf8(tmp_path: Path) -> None:
    text = "Café au lait, naïve façade, 48 V. " * 50
    path = _write(tmp_path, "notes.txt", text.encode() + b"\xff trailing")
    got = read_document(path).text
    assert "Café au lait" in got and "Ã" not in got
    assert got.count("\ufffd") == 1  # only the bad byte is replaced


def test_a_real_windows_1252_file_still_decodes(tmp_path: Path) -> None:
    path = _write(tmp_path, "legacy.txt", "Café – “quoted” 10 €. ".encode("cp1252") * 20)
    got = read_document(path).text
    assert got.startswith("Café – “quoted” 10 €.")
    assert "\ufffd" not in got


def test_utf8_with_bom_and_clean_files_are_unchanged(tmp_path: Path) -> None:
    path = _write(tmp_path, "bom.md", "\ufeff# Títle\n\nbody text".encode())
    doc = read_document(path)
    assert doc.text == "# Títle\n\nbody text" and doc.title == "Títle"


@pytest.mark.parametrize(
    "blob",
    [b"\x00\x01\x02\x03" * 64, bytes(range(1, 32)) * 40],
    ids=["nul-bytes", "control-characters"],
)
def test_binary_content_after_the_first_8_kb_is_detected(tmp_path: Path, blob: bytes) -> None:
    header = b"A perfectly ordinary text header line.\n" * 400  # ~16 KB of text first
    path = _write(tmp_path, "disguised.txt", header + blob + header)
    with pytest.raises(DocumentReadError, match="binary file"):
        read_document(path)


def test_text_with_a_few_control_characters_is_still_text(tmp_path: Path) -> None:
    body = ("log line \x1b[32mok\x1b[0m\n" + "plain text line here\n" * 10) * 200
    path = _write(tmp_path, "app.txt", body.encode())
    assert "plain text line here" in read_document(path).text


@pytest.mark.timeout(60)  # hang guard only: the old reader took minutes on this file
def test_deeply_nested_html_reads_in_one_pass(tmp_path: Path) -> None:
    depth = 60_000  # ~780 KB; the tree-based reader was quadratic in the nesting
    html = "<html><head><title>Deep</title></head><body>"
    html += "<div>x " * depth + "<script>var hidden = 1;</script>" + "</div>" * depth
    html += "</body></html>"
    doc = read_document(_write(tmp_path, "deep.html", html.encode()))
    assert doc.title == "Deep"
    assert doc.text.split() == ["x"] * depth  # one block per div, the script dropped
    assert "hidden" not in doc.text


@pytest.mark.timeout(60)
def test_markdown_title_on_a_long_line_of_spaces(tmp_path: Path) -> None:
    text = "# Report" + " " * 200_000 + "end\n\nbody"
    doc = read_document(_write(tmp_path, "spaces.md", text.encode()))
    assert doc.title.startswith("Report") and doc.title.endswith("end")


def test_html_structure_is_kept(tmp_path: Path) -> None:
    html = (
        "<html><head><title> The  Title </title><style>p{}</style></head><body>"
        "<h1>Head</h1><p>First &amp; second</p><ul><li>one</li><li>two</li></ul>"
        "<svg><text>drawn</text></svg><br/>after<noscript>ns</noscript></body></html>"
    )
    doc = read_document(_write(tmp_path, "page.html", html.encode()))
    assert doc.title == "The Title"
    assert doc.text == "Head\n\nFirst & second\n\none\n\ntwo\n\nafter"


def test_an_inherited_ignore_or_a_programs_handler_is_left_alone() -> None:
    import signal

    from selfroute.stores import _health

    def mine(signum: int, frame: object) -> None:  # pragma: no cover - never delivered
        pass

    before = (signal.getsignal(signal.SIGHUP), signal.getsignal(signal.SIGTERM))
    try:
        signal.signal(signal.SIGHUP, signal.SIG_IGN)  # as under nohup
        signal.signal(signal.SIGTERM, mine)
        _health._guard_signals()
        assert signal.getsignal(signal.SIGHUP) is signal.SIG_IGN
        assert signal.getsignal(signal.SIGTERM) is mine
        signal.signal(signal.SIGHUP, signal.SIG_DFL)
        _health._guard_signals()
        assert signal.getsignal(signal.SIGHUP) is _health._remove_then_die
    finally:
        signal.signal(signal.SIGHUP, before[0])
        signal.signal(signal.SIGTERM, before[1])
