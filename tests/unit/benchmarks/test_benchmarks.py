"""Smoke tests of the benchmarks: each runs in its tiny ``--quick`` configuration on the vendored
fixture data and prints its table; missing data is skipped with a clear line. No timed assertions:
the speed targets live in ``python -m benchmarks``, not in tests."""

from __future__ import annotations

from pathlib import Path

import pytest

import selfroute as sr
from benchmarks import run_all
from benchmarks._common import FIXTURES, BenchResult, Row
from benchmarks._retrievers import available_retrievers, build_retriever
from benchmarks.bench_economics import contains_answer, normalize
from benchmarks.bench_fitting import locate_evidence, split_sentences

TABLE_HEADER = "| metric | baseline | ours | ratio | target | result |"


@pytest.fixture
def docs_page(tmp_path: Path) -> Path:
    page = tmp_path / "benchmarks.md"
    page.write_text(
        f"# Benchmarks\n\nintro\n\n{run_all.START}\nold results\n{run_all.END}\n\noutro\n",
        encoding="utf-8",
    )
    return page


@pytest.mark.slow
@pytest.mark.parametrize("key", list(run_all.BENCHMARKS))
def test_each_benchmark_runs_quick_and_writes_its_table(
    key: str, docs_page: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = run_all.main(
        ["--quick", "--only", key, "--data", str(FIXTURES), "--docs", str(docs_page)]
    )
    out = capsys.readouterr().out
    assert code == 0, out
    assert f"### {key}." in out
    assert TABLE_HEADER in out
    assert "skipped" not in out
    page = docs_page.read_text(encoding="utf-8")
    assert "old results" not in page
    assert page.startswith("# Benchmarks\n\nintro\n\n" + run_all.START)
    assert page.rstrip().endswith(run_all.END + "\n\noutro")
    assert TABLE_HEADER in page
    assert "CPUs" in page and "Python" in page and "langchain-core" in page
    assert ("met" in page) or ("missed" in page)


def test_missing_data_is_skipped_with_the_path(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = tmp_path / "nowhere"
    code = run_all.main(["--quick", "--only", "5,6", "--data", str(missing), "--no-write"])
    out = capsys.readouterr().out
    assert code == 0
    assert out.count("skipped: data not found at") == 2
    assert str(missing) in out


def test_data_path_env_override(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from benchmarks._common import data_dir

    monkeypatch.setenv("SELFROUTE_DATA", str(tmp_path))
    assert data_dir() == tmp_path
    monkeypatch.delenv("SELFROUTE_DATA")
    assert data_dir().parts[-2:] == ("shared", "data")


def test_unknown_benchmark_is_an_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert run_all.main(["--only", "99", "--no-write"]) == 2
    assert "unknown benchmark" in capsys.readouterr().err


def test_write_docs_appends_markers_when_absent(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text("# Benchmarks\n", encoding="utf-8")
    run_all.write_docs(f"{run_all.START}\nX\n{run_all.END}", page)
    run_all.write_docs(f"{run_all.START}\nY\n{run_all.END}", page)
    text = page.read_text(encoding="utf-8")
    assert text.count(run_all.START) == 1 and "Y" in text and "\nX\n" not in text


def test_result_markdown_marks_missed_targets() -> None:
    result = BenchResult(
        "9", "demo", rows=[Row("a", "1", "2", "2.0", "<= 1.1", False), Row("b", "1", "1", "1.0")]
    )
    md = result.markdown()
    assert "**missed**" in md and "| b | 1 | 1 | 1.0 |  |  |" in md


def test_normalize_turns_punctuation_into_spaces() -> None:
    # SQuAD's own normalisation would glue these into "adriaticfell" / "myhills".
    assert contains_answer("naval bases of the Adriatic—fell again", ["the Adriatic"])
    assert contains_answer("include John Myhill's definition", ["John Myhill"])
    assert not contains_answer("the Adriatic Sea", ["Adria"])
    assert normalize("The  Cat, a dog!") == "cat dog"


def test_every_retriever_returns_ranked_passages() -> None:
    doc = "Alpha beta gamma. " * 300 + "The lighthouse keeper was Mara Holt. " + "Delta. " * 300
    chunks = sr.chunk_text(doc, doc_id="d")
    assert available_retrievers()[0] == "bm25"
    for name in available_retrievers():
        hits = build_retriever(name, chunks)("Who was the lighthouse keeper?", 1)
        assert len(hits) == 1, name
        assert "Mara Holt" in hits[0].text, name
        assert isinstance(hits[0].source, sr.Chunk), name
    with pytest.raises(ValueError, match="unknown retriever"):
        build_retriever("nope", chunks)


def test_locate_evidence_finds_the_key_sentence() -> None:
    doc = (
        "The boat left at dawn. Kino found a great pearl in the oyster. "
        "Juana sang the song of the family. The doctor refused to come."
    )
    evidence = locate_evidence(split_sentences(doc), "What did Kino find?", "A great pearl.")
    assert evidence is not None and evidence.located
    assert evidence.sentence == "Kino found a great pearl in the oyster."
    missing = locate_evidence(split_sentences(doc), "Who won?", "The red team won the cup.")
    assert missing is not None and not missing.located


def test_oracle_reader_routes_through_the_core() -> None:
    from benchmarks.bench_economics import OracleHandler

    doc = "Alpha beta gamma. " * 200 + "The capital is Paris. " + "Delta epsilon. " * 200
    index = sr.LexicalIndex(sr.chunk_text(doc, doc_id="d"))
    answered = sr.flow.run_flow(
        sr.flow.self_route_flow("What is the capital?"), OracleHandler(index.search, doc, ["Paris"])
    )
    assert answered.answered_from_chunks and answered.answer == "Paris"
    declined = OracleHandler(index.search, doc, ["Rome"])
    result = sr.flow.run_flow(sr.flow.self_route_flow("What is the capital?"), declined)
    assert result.route is sr.Route.LONG_CONTEXT and declined.lc_saw_answer is False


def test_merge_replaces_only_the_sections_run(tmp_path: Path) -> None:
    page = tmp_path / "benchmarks.md"
    old = [BenchResult("5", "Five", rows=[Row("m5", "a", "b", "c", "", None)]),
           BenchResult("10", "Ten", rows=[Row("old10", "a", "b", "c", "", None)])]  # fmt: skip
    run_all.write_docs(run_all.render(old, quick=False, seconds=3.0), page)
    before = page.read_text(encoding="utf-8")
    new = [BenchResult("10", "Ten", rows=[Row("new10", "a", "b", "c", "< 1 s", True)]),
           BenchResult("11", "Eleven", rows=[Row("m11", "a", "b", "c", "", None)])]  # fmt: skip
    run_all.merge_sections(new, page)
    text = page.read_text(encoding="utf-8")
    assert text.count(run_all.START) == 1 and text.count(run_all.END) == 1
    assert "Run: full, 3 s total" in text  # the header of the last full run stays
    assert "| m5 |" in text and "old10" not in text and "| new10 |" in text
    assert (
        text.index("### 5.")
        < text.index("### 10.")
        < text.index("### 11.")
        < text.index(run_all.END)
    )
    assert "_Run alone (`python -m benchmarks --only 10 --merge`): date: " in text
    assert before.split("### 5.")[1].split("### 10.")[0] in text  # section 5 untouched
