"""The response cache: isolation between prompts/models, persistence, integrity checks."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from selfroute import ConfigurationError, Generation, Usage
from selfroute.eval import ResponseCache, default_cache_path


def test_roundtrip_and_persistence(tmp_path: Path) -> None:
    path = tmp_path / "sub" / "cache.sqlite"
    with ResponseCache(path) as cache:
        cache.put("model-a", "prompt 1", Generation("answer", Usage.of(10, 2), "gpt-x"), 1.5)
        assert len(cache) == 1
    with ResponseCache(path) as cache:
        hit = cache.get("model-a", "prompt 1")
        assert hit is not None
        assert hit.generation.text == "answer" and hit.generation.model == "gpt-x"
        assert hit.generation.usage == Usage.of(10, 2)
        assert hit.latency_s == 1.5
        assert cache.hits == 1


def test_other_prompt_model_or_params_never_hit(tmp_path: Path) -> None:
    with ResponseCache(tmp_path / "c.sqlite") as cache:
        cache.put('{"model": "a", "temperature": 0}', "P", Generation("A"), 0.1)
        assert cache.get('{"model": "b", "temperature": 0}', "P") is None
        assert cache.get('{"model": "a", "temperature": 0.7}', "P") is None
        assert cache.get('{"model": "a", "temperature": 0}', "P ") is None
        assert cache.get('{"model": "a", "temperature": 0}', "P") is not None
        assert cache.misses == 3


def test_usage_none_is_kept_none(tmp_path: Path) -> None:
    with ResponseCache(tmp_path / "c.sqlite") as cache:
        cache.put("m", "p", Generation("x"), 0.0)
        hit = cache.get("m", "p")
        assert hit is not None and hit.generation.usage is None


def test_entry_whose_hashes_disagree_is_ignored(tmp_path: Path) -> None:
    path = tmp_path / "c.sqlite"
    with ResponseCache(path) as cache:
        cache.put("m", "p", Generation("x"), 0.0)
    conn = sqlite3.connect(path)
    conn.execute("UPDATE answers SET prompt_sha = 'tampered'")
    conn.commit()
    conn.close()
    with ResponseCache(path) as cache:
        assert cache.get("m", "p") is None
        assert cache.contains("m", "p")  # present, but not served


def test_bad_paths(tmp_path: Path) -> None:
    with pytest.raises(ConfigurationError, match="folder"):
        ResponseCache(tmp_path)
    junk = tmp_path / "junk.sqlite"
    junk.write_bytes(b"this is not a database" * 100)
    with pytest.raises(ConfigurationError, match="cannot use"):
        ResponseCache(junk)


def test_default_path_honours_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("SELFROUTE_CACHE_DIR", str(tmp_path))
    assert default_cache_path() == tmp_path / "eval-cache.sqlite"
    monkeypatch.delenv("SELFROUTE_CACHE_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert default_cache_path() == tmp_path / "xdg" / "selfroute" / "eval-cache.sqlite"
