"""Token counting before calls: tiktoken offline, else a labelled heuristic."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import selfroute as sr
from selfroute import _tokens

ROOT = Path(__file__).resolve().parents[3]


def test_offline_tiktoken_is_found() -> None:
    counter = sr.default_token_counter()
    assert isinstance(counter, sr.TiktokenCounter)
    assert counter.source == "tokenizer" and counter.name == "tiktoken:o200k_base"
    assert counter.count("Hello, world!") == 4
    assert counter.count("") == 0
    assert sr.default_token_counter() is counter  # cached
    assert sr.default_token_counter("cl100k_base").name == "tiktoken:cl100k_base"
    assert isinstance(counter, sr.TokenCounter)  # satisfies the protocol


def test_loading_leaves_the_environment_alone() -> None:
    code = (
        "import os, selfroute as sr; c = sr.default_token_counter(); "
        "print(c.name, os.environ.get('TIKTOKEN_CACHE_DIR'))"
    )
    env = {k: v for k, v in os.environ.items() if k != "TIKTOKEN_CACHE_DIR"}
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True
    )
    assert out.stdout.split() == ["tiktoken:o200k_base", "None"]


@pytest.fixture
def fresh_cache(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_tokens, "_cache", {})


def test_encoding_not_on_disk_falls_back_without_downloading(
    fresh_cache: None, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    import tiktoken.load

    fetched: list[Any] = []

    def fake_read_file(blob: str) -> bytes:
        fetched.append(blob)
        return b""

    monkeypatch.setattr(tiktoken.load, "read_file", fake_read_file)
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path))  # an empty cache
    counter = sr.default_token_counter("r50k_base")
    assert fetched == []  # never reached for the network
    assert isinstance(counter, sr.HeuristicCounter)
    assert counter.source == "heuristic" and counter.name == "heuristic:4cpt"


def test_without_tiktoken_the_heuristic_is_labelled(
    fresh_cache: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "tiktoken", None)  # import fails
    counter = sr.default_token_counter()
    assert counter.source == "heuristic"
    # ... and the flow labels its estimates accordingly.
    handler = sr.FunctionHandler(
        retrieve=lambda q, k: [sr.Passage("Mara kept the lamp.")],
        generate=lambda prompt: "Mara.",
    )
    result = sr.flow.run_flow(
        sr.flow.self_route_flow("Who?", sr.RouteConfig(token_counter=counter)), handler
    )
    assert result.steps[0].usage.source == "heuristic" and result.steps[0].usage.is_estimate


def test_o200k_comes_from_the_package_whatever_else_is_installed(
    fresh_cache: None, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Issue 17: the count must not depend on llama-index's cache, TIKTOKEN_CACHE_DIR or the
    network."""
    import tiktoken.load

    text = (ROOT / "README.md").read_text(encoding="utf-8")
    reference = sr.default_token_counter().count(text)
    monkeypatch.setattr(_tokens, "_cache", {})
    monkeypatch.setattr(_tokens, "_llama_index_tiktoken_cache", lambda: None)  # no llama-index
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path))  # an empty cache
    monkeypatch.setattr(tiktoken.load, "read_file", lambda blob: pytest.fail(f"fetched {blob}"))
    counter = sr.default_token_counter()
    assert counter.name == "tiktoken:o200k_base" and counter.count(text) == reference


def test_the_bundled_encoding_is_tiktokens_own(fresh_cache: None) -> None:
    import tiktoken

    cached = _tokens._cached_encoding(tiktoken, "o200k_base")  # llama-index's copy, when present
    if cached is None:
        pytest.skip("no on-disk tiktoken copy of o200k_base to compare with")
    bundled = _tokens._bundled_encoding(tiktoken, "o200k_base")
    assert bundled._mergeable_ranks == cached._mergeable_ranks
    assert bundled._pat_str == cached._pat_str
    assert bundled._special_tokens == cached._special_tokens


def test_the_bundled_files_list_their_ranks_in_order() -> None:
    """The loader does not parse the rank column of a file flagged ``ranks_in_order``: check
    that the flag is true of the file (whose hash the loader checks)."""
    import gzip

    for encoding, spec in _tokens._BUNDLED.items():
        raw = gzip.decompress((_tokens._DATA / f"{encoding}.tiktoken.gz").read_bytes())
        ranks = [int(line.split()[1]) for line in raw.splitlines() if line.strip()]
        assert spec["ranks_in_order"] is (ranks == list(range(len(ranks)))), encoding


def test_a_damaged_bundled_file_is_refused(
    fresh_cache: None, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    import gzip

    import tiktoken

    (tmp_path / "o200k_base.tiktoken.gz").write_bytes(gzip.compress(b"aGVsbG8= 0\n"))
    monkeypatch.setattr(_tokens, "_DATA", tmp_path)
    with pytest.raises(ValueError, match="damaged"):
        _tokens._bundled_encoding(tiktoken, "o200k_base")


def test_heuristic_counter() -> None:
    h = sr.HeuristicCounter()
    assert h.count("") == 0 and h.count("abc") == 1 and h.count("a" * 400) == 100
    assert h.head("abcdefgh", 1) == "abcd" and h.tail("abcdefgh", 1) == "efgh"
    assert h.head("abc", 0) == "" and h.tail("abc", 0) == ""
    assert sr.HeuristicCounter(3).name == "heuristic:3cpt"


@pytest.mark.parametrize("n", [0, 1, 5, 50])
def test_tiktoken_head_and_tail_respect_the_limit(n: int) -> None:
    counter = sr.default_token_counter()
    text = "The keeper climbed the ninety-two steps to trim the wick. " * 20
    head, tail = counter.head(text, n), counter.tail(text, n)
    assert counter.count(head) <= n and counter.count(tail) <= n
    assert text.startswith(head) and text.endswith(tail)
    assert counter.head("short", 100) == "short" and counter.tail("short", 100) == "short"


def test_special_tokens_are_counted_as_text() -> None:
    assert sr.default_token_counter().count("<|endoftext|>") > 1
