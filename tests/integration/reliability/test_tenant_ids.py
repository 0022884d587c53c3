"""Issue 16, finding 1: two tenants choosing the same document id in one shared collection.

Acme and then Globex upload a "q3-report" into the same Chroma collection (the documented shared
collection). Before the fix, the second upload deleted ``where={"doc_id": {"$in": ids}}`` and
upserted the ids ``"q3-report:0"...``, wiping Acme's chunks. Now the upload is scoped to the tenant
(when the owner keys are known) or refused (when they are not); Acme's document survives, and a
real ``ChatOpenAI`` (LangChain) / LlamaIndex ``OpenAI`` on the loopback server still gets Acme's
text, and only Acme's.
"""

from __future__ import annotations

import uuid
from typing import Any

import pytest

import selfroute as sr
from tests.integration.reliability._tenants import ACME_MARK, GLOBEX_MARK, always_decline, leaked
from tests.support.clients import chat_openai, llamaindex_openai
from tests.support.openai_server import ScriptedOpenAIServer

chromadb = pytest.importorskip("chromadb")

ACME_Q3 = " ".join(
    [f"Acme quarterly report. The launch code of the project is {ACME_MARK}. Sales rose."] * 30
)
GLOBEX_Q3 = " ".join(
    [f"Globex quarterly report. The launch code of the project is {GLOBEX_MARK}. Costs fell."] * 30
)
QUESTION = "What is the launch code in the quarterly report?"


# ------------------------------------------------------------------------------------------
# LangChain: SelfRoute.from_documents / index_documents
# ------------------------------------------------------------------------------------------
lcs = pytest.importorskip("langchain_selfroute")
from langchain_core.documents import Document  # noqa: E402


def _lc_doc(tenant: str, text: str, **extra: Any) -> Document:
    return Document(page_content=text, metadata={"tenant": tenant, "doc_id": "q3-report", **extra})


def _upload(
    server: ScriptedOpenAIServer, client: Any, name: str, tenant: str, text: str, **kw: Any
) -> Any:
    return lcs.SelfRoute.from_documents(
        [_lc_doc(tenant, text)],
        llm=chat_openai(server),
        embedding=lcs.HashingEmbeddings(),
        client=client,
        collection_name=name,
        search_kwargs={"k": 3, "filter": {"tenant": tenant}},
        long_context="parents",
        **kw,
    )


def test_same_id_from_two_tenants_keeps_both(openai_server: ScriptedOpenAIServer) -> None:
    """Tenant-filtered uploads (the owner key is known from the filter): both reports stay."""
    openai_server.responder = always_decline
    client = chromadb.EphemeralClient()
    name = f"shared-{uuid.uuid4().hex[:10]}"
    acme = _upload(openai_server, client, name, "acme", ACME_Q3)
    globex = _upload(openai_server, client, name, "globex", GLOBEX_Q3)
    store = acme.parent_loader.vectorstore
    tenants = {m["tenant"] for m in store.get(include=["metadatas"])["metadatas"]}
    assert tenants == {"acme", "globex"}  # the second upload did not wipe the first
    out = acme.invoke(QUESTION)
    assert out.route is sr.Route.LONG_CONTEXT
    assert leaked(openai_server, (ACME_MARK,))  # Acme's own report reached its LC prompt
    assert leaked(openai_server, (GLOBEX_MARK,)) == []
    globex.invoke(QUESTION)
    assert leaked(openai_server, (GLOBEX_MARK,))


def test_reupload_by_one_tenant_replaces_only_its_own(openai_server: ScriptedOpenAIServer) -> None:
    client = chromadb.EphemeralClient()
    name = f"shared-{uuid.uuid4().hex[:10]}"
    _upload(openai_server, client, name, "acme", ACME_Q3)
    _upload(openai_server, client, name, "globex", GLOBEX_Q3)
    new = "Acme revised report. " * 40
    route = _upload(openai_server, client, name, "acme", new)
    got = route.parent_loader.vectorstore.get(include=["documents", "metadatas"])
    acme_text = [
        d for d, m in zip(got["documents"], got["metadatas"], strict=True) if m["tenant"] == "acme"
    ]
    globex_text = [
        d for d, m in zip(got["documents"], got["metadatas"], strict=True) if m["tenant"] != "acme"
    ]
    assert all(ACME_MARK not in t for t in acme_text)  # the old Acme chunks are gone
    assert "".join(acme_text).strip() == new.strip()
    assert any(GLOBEX_MARK in t for t in globex_text)  # Globex untouched


def test_unknown_owner_keys_refuse_instead_of_deleting(
    openai_server: ScriptedOpenAIServer,
) -> None:
    """No filter at upload time: the owner keys are unknown, so the colliding upload is refused
    and Acme's report is still served to an Acme-filtered route."""
    openai_server.responder = always_decline
    client = chromadb.EphemeralClient()
    name = f"shared-{uuid.uuid4().hex[:10]}"
    kw = {
        "llm": chat_openai(openai_server),
        "embedding": lcs.HashingEmbeddings(),
        "client": client,
        "collection_name": name,
    }
    first = lcs.SelfRoute.from_documents([_lc_doc("acme", ACME_Q3)], **kw)
    with pytest.raises(sr.InvalidInputError, match=r"q3-report.*tenant: 'acme' stored") as info:
        lcs.SelfRoute.from_documents([_lc_doc("globex", GLOBEX_Q3)], **kw)
    assert info.value.context["conflicting_keys"] == ["tenant"]
    store = first.parent_loader.vectorstore
    acme = lcs.SelfRoute.from_vectorstore(
        store, llm=chat_openai(openai_server), search_kwargs={"filter": {"tenant": "acme"}}
    )
    assert acme.invoke(QUESTION).route is sr.Route.LONG_CONTEXT
    assert leaked(openai_server, (ACME_MARK,))
    # Same metadata: an ordinary re-index, accepted. scope_keys=() replaces on purpose.
    lcs.index_documents(store, [_lc_doc("acme", ACME_Q3)])
    lcs.index_documents(store, [_lc_doc("globex", GLOBEX_Q3)], scope_keys=())
    assert {m["tenant"] for m in store.get(include=["metadatas"])["metadatas"]} == {"globex"}


def test_scope_keys_must_be_on_every_document() -> None:
    from langchain_selfroute._chroma import open_chroma

    store = open_chroma(embedding=lcs.HashingEmbeddings())
    with pytest.raises(sr.InvalidInputError, match="no 'tenant' metadata"):
        lcs.index_documents(store, [Document(page_content="text " * 10)], scope_keys=("tenant",))


# ------------------------------------------------------------------------------------------
# LlamaIndex: build_index / SelfRouteQueryEngine.from_documents
# ------------------------------------------------------------------------------------------
lis = pytest.importorskip("llamaindex_selfroute")
from llama_index.core import Document as LIDocument  # noqa: E402
from llama_index.core.vector_stores import ExactMatchFilter, MetadataFilters  # noqa: E402


def _li_doc(tenant: str, text: str) -> LIDocument:
    return LIDocument(text=text, id_="q3-report", metadata={"tenant": tenant})


def test_llamaindex_same_id_from_another_tenant_is_refused(
    openai_server: ScriptedOpenAIServer, tmp_path: Any
) -> None:
    openai_server.responder = always_decline
    embed = lis.HashingEmbedding()
    lis.build_index([_li_doc("acme", ACME_Q3)], embed_model=embed, persist_dir=tmp_path)
    for scope in (None, ("tenant",)):
        with pytest.raises(sr.InvalidInputError, match="ids are global in an index"):
            lis.build_index(
                [_li_doc("globex", GLOBEX_Q3)],
                embed_model=embed,
                persist_dir=tmp_path,
                scope_keys=scope,
            )
    engine = lis.SelfRouteQueryEngine.from_persist_dir(
        tmp_path,
        embed_model=embed,
        llm=llamaindex_openai(openai_server),
        filters=MetadataFilters(filters=[ExactMatchFilter(key="tenant", value="acme")]),
    )
    assert lis.get_route_result(engine.query(QUESTION)).route is sr.Route.LONG_CONTEXT
    assert leaked(openai_server, (ACME_MARK,))  # Acme's report survived the refused upload
    assert leaked(openai_server, (GLOBEX_MARK,)) == []
    # Its own re-upload with a new title is an update when the owner key is named.
    updated = LIDocument(text=ACME_Q3, id_="q3-report", metadata={"tenant": "acme", "v": 2})
    lis.build_index([updated], embed_model=embed, persist_dir=tmp_path, scope_keys=("tenant",))
    index = lis.load_index(tmp_path, embed_model=embed)
    assert index.docstore.get_document("q3-report").metadata == {"tenant": "acme", "v": 2}
