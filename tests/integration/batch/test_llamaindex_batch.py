"""``SelfRouteQueryEngine.batch_job`` with the real LlamaIndex ``OpenAI`` LLM: the same results
as ``engine.query`` online, sync and async."""

from __future__ import annotations

import pytest
from llama_index.core import Document, VectorStoreIndex

from llamaindex_selfroute import (
    HashingEmbedding,
    SelfRouteQueryEngine,
    WordChunkNodeParser,
    get_route_result,
)
from selfroute import ConfigurationError, Route
from tests.integration.batch.corpus import comparable, documents, respond
from tests.support.clients import llamaindex_openai
from tests.support.openai_batch_server import OpenAIBatchServer

pytestmark = pytest.mark.integration


def _engine(srv: OpenAIBatchServer) -> SelfRouteQueryEngine:
    docs = [Document(text=t, id_=f"doc{i}") for i, t in enumerate(documents()[:4])]
    index = VectorStoreIndex.from_documents(
        docs, embed_model=HashingEmbedding(), transformations=[WordChunkNodeParser(chunk_words=60)]
    )
    return SelfRouteQueryEngine(
        index.as_retriever(similarity_top_k=3),
        llm=llamaindex_openai(srv, model="gpt-4o-mini"),
        long_context_llm=llamaindex_openai(srv, model="gpt-4o"),
        long_context="\n\n".join(documents()[:4]),
        k=3,
    )


async def test_engine_batch_job_matches_online_query() -> None:
    questions = [f"What is the access code of unit {n}?" for n in range(20)]
    with OpenAIBatchServer(respond) as srv:
        engine = _engine(srv)
        online = [comparable(get_route_result(engine.query(q))) for q in questions]
        outcomes = engine.batch_job(questions, poll_interval_s=0.01).results()
        assert [comparable(o.result) for o in outcomes] == online
        assert any(o.result and o.result.route is Route.LONG_CONTEXT for o in outcomes)
        again = await engine.batch_job(questions, poll_interval_s=0.01).aresults()
        assert [comparable(o.result) for o in again] == online
        assert len(srv.created) == 4


def test_an_llm_without_a_batch_backend_is_named() -> None:
    from llama_index.core.llms import MockLLM

    with OpenAIBatchServer(respond) as srv:
        engine = _engine(srv)
        engine._llm = MockLLM()  # type: ignore[assignment]
        with pytest.raises(ConfigurationError, match="MockLLM has no batch API backend"):
            engine.batch_job(["q?"])
        engine._llm = llamaindex_openai(srv)
        engine._long_context_llm = MockLLM()  # type: ignore[assignment]
        with pytest.raises(ConfigurationError, match="different providers"):
            engine.batch_job(["q?"])
