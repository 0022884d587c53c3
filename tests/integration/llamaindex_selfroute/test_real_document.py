"""A real document (LaRA's Bartleby excerpt, MIT) through from_documents, Chroma and OpenAI.

Questions from LaRA's ``32k_book_location`` (answerable: the nickname of the office boy) and
``32k_book_hallu`` (not answerable from the text). The loopback "models" answer only from what
their prompt contains, so the routes follow from what retrieval and the long context really held.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from llama_index.core import Document
from llama_index.core.storage.docstore import SimpleDocumentStore

import selfroute as sr
from llamaindex_selfroute import HashingEmbedding, SelfRouteQueryEngine, get_route_result
from tests.support._loopback import last_user_text
from tests.support.clients import llamaindex_openai
from tests.support.openai_server import Reply

pytestmark = pytest.mark.integration

FIXTURE = Path(__file__).resolve().parents[2] / "fixtures" / "llamaindex" / "bartleby_excerpt.txt"
TEXT = FIXTURE.read_text(encoding="utf-8")
NICKNAME = (
    "What nickname did the narrator and his clerks give to the youthful office boy who worked "
    "for him?"
)
HALLU = "What was Quimby's favorite book to read during his breaks at the office?"
RAG_MARK = "retrieved from a longer document"  # only the RAG prompts say this


def responder(body: dict) -> Reply:
    prompt = last_user_text(body)
    knows_nickname = NICKNAME in prompt and "Pippin" in prompt
    if RAG_MARK in prompt:
        return Reply("Pippin." if knows_nickname else "unanswerable")
    return Reply("Pippin." if knows_nickname else "The text does not mention his favorite book.")


def _squash(text: str) -> str:
    return " ".join(text.split())


@pytest.fixture
def build(openai_server, tmp_path):
    openai_server.responder = responder

    def make(**kwargs):
        return SelfRouteQueryEngine.from_documents(
            [Document(text=TEXT, id_="bartleby", metadata={"title": "Bartleby, The Scrivener"})],
            llm=llamaindex_openai(openai_server, model="gpt-4o-mini"),
            long_context_llm=llamaindex_openai(openai_server, model="gpt-4o"),
            embed_model=HashingEmbedding(),
            persist_dir=tmp_path / "index",
            **kwargs,
        )

    return make


def _lc_prompt(server) -> str:
    prompts = [last_user_text(r) for r in server.requests if r["model"] == "gpt-4o"]
    assert len(prompts) == 1
    return prompts[0]


def test_answerable_from_chunks(openai_server, build) -> None:
    result = get_route_result(build().query(NICKNAME))
    assert (result.route, result.answer) == (sr.Route.RAG, "Pippin.")
    assert len(result.sources) == 5
    assert [r["model"] for r in openai_server.requests] == ["gpt-4o-mini"]
    # five of the ~10 chunks cost about half of always-long-context
    assert result.long_context_tokens and 0.3 < result.token_ratio < 0.8


@pytest.mark.parametrize("docstore", ["kept", "rebuilt-from-chroma"])
def test_unanswerable_reads_the_whole_document(openai_server, build, docstore: str) -> None:
    kwargs = {"docstore": SimpleDocumentStore()} if docstore != "kept" else {}
    result = get_route_result(build(**kwargs).query(HALLU))
    assert (result.route, result.reason) == (sr.Route.LONG_CONTEXT, sr.Reason.DECLINED)
    assert result.answer == "The text does not mention his favorite book."
    # the long-context model declined in its own words: the result abstains
    assert result.abstention is sr.Abstention.DECLINED and result.long_context_verdict == "refusal"
    # the document arrives whole and in order, whether kept or rebuilt from its 300-word chunks
    assert TEXT.strip() in _lc_prompt(openai_server)
    assert result.context["truncated"] is False


def test_small_window_keeps_the_retrieved_chunks(openai_server, build) -> None:
    engine = build(long_context_window=2500, answer_tokens=200)
    result = get_route_result(engine.query(HALLU))
    lc_prompt = _lc_prompt(openai_server)
    assert result.context["truncated"] is True and result.context["strategy"] == "fill"
    assert result.context["tokens"] < result.context["original_tokens"]
    for passage in result.sources[:2]:
        assert _squash(passage.text) in _squash(lc_prompt)


def test_reopened_index_gives_the_same_prompts(openai_server, build, tmp_path) -> None:
    build().query(HALLU)
    first = [last_user_text(r) for r in openai_server.requests]
    openai_server.reset()
    reopened = SelfRouteQueryEngine.from_persist_dir(
        str(tmp_path / "index"),
        llm=llamaindex_openai(openai_server, model="gpt-4o-mini"),
        long_context_llm=llamaindex_openai(openai_server, model="gpt-4o"),
        embed_model=HashingEmbedding(),
    )
    reopened.query(HALLU)
    assert [last_user_text(r) for r in openai_server.requests] == first
