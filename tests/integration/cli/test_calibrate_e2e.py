"""End to end: ``selfroute eval`` with the policy flags and Self-Route grounded on the bundled
SQuAD sample, ``selfroute calibrate`` on its results, and ``selfroute ask`` using the written
config against a loopback model server (real LangChain client, real HTTP)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from selfroute import GROUNDING_PREFIX
from selfroute.cli import main
from selfroute.cli._config import load_toml
from selfroute.eval import load_sample, supporting_sentence
from selfroute.eval._readers import match_key
from tests.support._loopback import Reply, last_user_text
from tests.support.openai_server import ScriptedOpenAIServer

pytestmark = pytest.mark.integration

ITEMS = load_sample()[:60]
GOLD = {it.question: it.answers for it in ITEMS}


def span_reader(body: dict[str, Any]) -> Reply:
    """A careful model: answers with a gold span it can see, quoting its sentence when asked;
    declines otherwise."""
    prompt = last_user_text(body)
    question = re.search(r"Question: (.*)\nAnswer:", prompt)
    assert question is not None, prompt[-200:]
    seen = prompt[: question.start()]
    hay = f" {match_key(seen)} "
    for gold in GOLD.get(question.group(1), ()):
        if f" {match_key(gold)} " in hay:
            text = gold
            if prompt.startswith(GROUNDING_PREFIX):
                sentence = supporting_sentence(seen, gold)
                assert sentence is not None
                text += f'\nQuote: "{sentence}"'
            return Reply(text)
    return Reply("unanswerable")


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.chdir(tmp_path)
    for name in ("OPENAI_API_KEY", "GOOGLE_API_KEY", "GEMINI_API_KEY", "SELFROUTE_CONFIG"):
        monkeypatch.delenv(name, raising=False)


def _ask(
    capsys: pytest.CaptureFixture[str], server: ScriptedOpenAIServer, question: str, *extra: str
) -> dict[str, Any]:
    code = main(
        ["ask", question, "--doc", "sample.txt", "--base-url", server.base_url, "--model", "m",
         "--json", *extra]
    )  # fmt: skip
    out, err = capsys.readouterr()
    assert code == 0, err
    return dict(json.loads(out))


def test_eval_calibrate_then_ask_uses_the_calibrated_config(
    tmp_path: Path,
    openai_server: ScriptedOpenAIServer,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # 1. eval: four methods, a k-ladder, structured verdicts, simulated latency
    code = main(
        ["eval", "--sample", "--reader", "oracle", "--limit", str(len(ITEMS)), "--k", "5",
         "--methods", "lc,rag,self-route,self-route-grounded", "--k-ladder", "20",
         "--verdict", "structured", "--simulate-latency", "--out", "out", "--no-cache",
         "--no-progress"]
    )  # fmt: skip
    out, err = capsys.readouterr()
    assert code == 0, err
    assert "| Self-Route grounded (k=5) |" in out and "## Abstention" in out
    summary = json.loads(Path("out/summary.json").read_text())
    rates = {a["method"]: a["correct_decline_rate"] for a in summary["abstention"]}
    assert rates == {"lc": 1.0, "rag": 1.0, "self_route": 1.0, "self_route_grounded": 1.0}
    assert summary["policy"]["k_ladder"] == [20] and summary["latency_simulated"]
    records = [json.loads(line) for line in Path("out/results.jsonl").read_text().splitlines()]
    plain = [r for r in records if r["method"] == "self_route"]
    assert all(len(r["rungs"]) <= 2 for r in plain)
    assert any(len(r["rungs"]) == 2 for r in plain)  # the ladder climbed
    assert all(c["structured"] for r in plain for c in r["calls"] if c["stage"] == "rag")

    # 2. calibrate: writes [pre_route] into selfroute.toml, keeping what is there
    Path("selfroute.toml").write_text("temperature = 0.0\n", encoding="utf-8")
    assert main(["calibrate", "out/results.jsonl"]) == 0
    printed = capsys.readouterr().out
    assert "<- chosen" in printed and "wrote [pre_route]" in printed
    config = load_toml(None, explicit=False)
    threshold = config["min_top_score"]
    assert isinstance(threshold, float) and config["pre_route"] is False
    assert config["temperature"] == 0.0
    assert config["score_scale"] == "bm25"  # the scale it was fitted on (issue 17)
    assert summary["score_scale"] == "bm25"

    # 3. ask over the same document: the config's threshold pre-routes a weakly retrieved
    #    question, and a well retrieved one is answered from the chunks
    Path("sample.txt").write_text(ITEMS[0].document, encoding="utf-8")
    openai_server.responder = span_reader
    weak = min((r for r in plain if r["top_score"] is not None), key=lambda r: r["top_score"])
    assert weak["top_score"] < threshold
    result = _ask(capsys, openai_server, weak["question"])
    assert (result["route"], result["reason"]) == ("long_context", "weak_retrieval")
    assert [s["stage"] for s in result["steps"]] == ["long_context"]
    strong = next(r for r in plain if r["answered_from_chunks"] and r["top_score"] > 2 * threshold)
    result = _ask(capsys, openai_server, strong["question"])
    assert result["reason"] == "answered" and result["answer"] in strong["gold"]
    # a flag beats the file: nothing scores 10,000
    result = _ask(capsys, openai_server, strong["question"], "--min-top-score", "10000")
    assert result["reason"] == "weak_retrieval"

    # the threshold is on BM25's scale: the store's fused RRF scores (~0.03) are refused by name
    Path("kb").mkdir()
    Path("kb/sample.txt").write_text(ITEMS[0].document, encoding="utf-8")
    assert main(["index", "kb", "--embedding", "offline", "--progress", "never"]) == 0
    capsys.readouterr()
    code = main(["ask", strong["question"], "--base-url", openai_server.base_url, "--model", "m"])
    err = capsys.readouterr().err
    assert code == 2 and "fitted on bm25 scores" in err and "--retrieval hybrid" in err
    assert "rrf" in err and "\n" not in err.strip()
    code = main(  # the store's BM25 is bm25s: other numbers than the core's BM25
        ["ask", strong["question"], "--base-url", openai_server.base_url, "--model", "m",
         "--retrieval", "bm25"]
    )  # fmt: skip
    err = capsys.readouterr().err
    assert code == 2 and "whose scores are bm25s" in err and "--doc FILE" in err

    # 4. grounded mode from the environment: the answer is verified and cited
    monkeypatch.setenv("SELFROUTE_GROUNDED", "1")
    result = _ask(capsys, openai_server, strong["question"])
    assert result["verified"] is True and result["citations"][0]["found"]
    assert main(
        ["ask", strong["question"], "--doc", "sample.txt", "--base-url",
         openai_server.base_url, "--model", "m"]
    ) == 0  # fmt: skip
    text = capsys.readouterr().out
    assert text.startswith(result["answer"]) and "\ncitations\n  [1] " in text
    assert "grounded    verified" in text

    # 5. an unanswerable question: "not found in the documents", the model text kept in --json
    monkeypatch.delenv("SELFROUTE_GROUNDED")
    impossible = next(r for r in plain if r["unanswerable"] and r["reason"] == "declined")
    assert main(
        ["ask", impossible["question"], "--doc", "sample.txt", "--base-url",
         openai_server.base_url, "--model", "m"]
    ) == 0  # fmt: skip
    text = capsys.readouterr().out
    assert text.startswith("not found in the documents\n")
    result = _ask(capsys, openai_server, impossible["question"])
    assert result["abstained"] and result["answer"] == "unanswerable"
    assert result["shown_answer"] == "not found in the documents"
