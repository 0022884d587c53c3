"""SelfRoute as a Runnable: composition, configuration, output, usage, long-context sources."""

from __future__ import annotations

import dataclasses
import json
from operator import itemgetter
from typing import Any

import pytest
from langchain_core.documents import Document
from langchain_core.runnables import (
    ConfigurableField,
    ConfigurableFieldSingleOption,
    RunnableLambda,
)
from langchain_core.vectorstores import InMemoryVectorStore

import selfroute as sr
from langchain_selfroute import HashingEmbeddings, SelfRoute, SelfRouteOutput
from selfroute import Reason, Route
from tests.conformance.scenarios import BY_NAME, DOCUMENT, LC_MODEL, RAG_MODEL
from tests.unit.langchain_selfroute.fakes import (
    ListRetriever,
    ScriptedChatModel,
    scenario_docs,
    scenario_route,
)

ANSWERED = BY_NAME["answered"]
SENTINEL = BY_NAME["sentinel"]


def declining_route(model: Any, **kwargs: Any) -> SelfRoute:
    """A route over the birth-year scenario (its chunks do not answer) with a fixed document."""
    return SelfRoute(
        retriever=ListRetriever(docs=scenario_docs(SENTINEL)),
        llm=model,
        document=DOCUMENT,
        **kwargs,
    )


def five_docs() -> list[Document]:
    return [
        Document(page_content=f"Passage {i} about the lighthouse.", metadata={"doc_id": "doc-1"})
        for i in range(5)
    ]


# composition ----------------------------------------------------------------------------------
def test_pipe_to_answer_lambda_and_itemgetter() -> None:
    route, _ = scenario_route(ANSWERED)
    assert (route | (lambda r: r.answer)).invoke(ANSWERED.question) == "Thirty-one years."
    assert (route | itemgetter("answer")).invoke(ANSWERED.question) == "Thirty-one years."
    # mapping values are plain strings, equal to the enums (the attributes are the enums)
    picked = (route | itemgetter("route")).invoke(ANSWERED.question)
    assert picked == Route.RAG and type(picked) is str
    upstream = RunnableLambda(lambda x: x["q"]) | route | itemgetter("reason")
    assert upstream.invoke({"q": ANSWERED.question}) == Reason.ANSWERED


def test_output_item_access_and_serialization() -> None:
    route, _ = scenario_route(SENTINEL)
    out = route.invoke(SENTINEL.question)
    assert out["answer"] == out.answer == "In 1901."
    assert out["token_ratio"] == out.token_ratio
    with pytest.raises(KeyError):
        out["nope"]
    assert out.get("nope", 7) == 7
    data = out.to_dict()
    json.dumps(data)  # JSON-serializable
    core = out.result.to_dict()
    assert set(data) == set(core)
    for key in ("answer", "route", "reason", "usage", "usage_by_stage", "steps", "token_ratio"):
        assert data[key] == core[key], key
    assert [s["page_content"] for s in data["sources"]] == list(SENTINEL.passages)
    assert data["route"] == "long_context" and data["usage"]["input_tokens"] == 1620
    dumped = out.model_dump()
    assert dumped["sources"][0]["page_content"] == SENTINEL.passages[0]
    assert "result" not in dumped and dumped["steps"] == core["steps"]
    assert out.stage_usage("long_context").input_tokens == 1500
    assert out.usage.input_tokens == 1620 and not out.answered_from_chunks
    with pytest.raises(AttributeError):  # a mapping now: attributes are read-only views
        out.answer = "changed"  # type: ignore[misc]
    assert SelfRouteOutput.model_json_schema()["title"] == "SelfRouteOutput"


def test_schemas() -> None:
    route, _ = scenario_route(ANSWERED)
    schema = route.get_input_jsonschema()
    assert {"type": "string"} in schema["anyOf"]
    assert schema["$defs"]["SelfRouteInputDict"]["required"] == ["question"]
    assert route.get_output_jsonschema()["title"] == "SelfRouteOutput"


# configuration --------------------------------------------------------------------------------
def test_configurable_k_with_any_retriever() -> None:
    model = ScriptedChatModel()
    route = SelfRoute(retriever=ListRetriever(docs=five_docs()), llm=model, document=DOCUMENT)
    configurable = route.configurable_fields(k=ConfigurableField(id="k", name="Chunks"))
    assert len(configurable.invoke("How long?").sources) == 5
    out = configurable.with_config(configurable={"k": 2}).invoke("How long?")
    assert len(out.sources) == 2
    assert out.result.sources[1].text == "Passage 1 about the lighthouse."


def test_k_is_passed_to_a_vectorstore_retriever() -> None:
    store = InMemoryVectorStore(HashingEmbeddings(dim=64))
    store.add_documents([Document(page_content=f"lighthouse keeper passage {i}") for i in range(8)])
    retriever = store.as_retriever()  # its own default k is 4
    route = SelfRoute(retriever=retriever, llm=ScriptedChatModel(), document=DOCUMENT)
    assert len(route.invoke("lighthouse keeper").sources) == 5
    configurable = route.configurable_fields(k=ConfigurableField(id="k"))
    assert len(configurable.with_config(configurable={"k": 7}).invoke("keeper").sources) == 7


class KRetriever(ListRetriever):
    """A custom retriever with a per-call ``k``."""

    seen_k: list[int] = []

    def _get_relevant_documents(
        self, query: str, *, run_manager: Any, k: int = 4
    ) -> list[Document]:
        self.seen_k.append(k)
        return list(self.docs)[:k]


def test_k_is_passed_to_a_retriever_that_takes_it() -> None:
    retriever = KRetriever(docs=five_docs(), seen_k=[])
    route = SelfRoute(retriever=retriever, llm=ScriptedChatModel(), document=DOCUMENT, k=3)
    assert len(route.invoke("How long?").sources) == 3
    assert retriever.seen_k == [3]
    wrapped = SelfRoute(retriever=retriever.with_retry(), llm=ScriptedChatModel(), k=2)
    assert len(wrapped.invoke("How long?").sources) == 2 and retriever.seen_k == [3, 2]
    plain = ListRetriever(docs=five_docs())  # takes no k: gets none, results are cut to k
    assert len(SelfRoute(retriever=plain, llm=ScriptedChatModel(), k=2).invoke("Q?").sources) == 2


def test_configurable_models() -> None:
    cheap = ScriptedChatModel(rag_output="unanswerable", lc_output="cheap LC")
    strong = ScriptedChatModel(rag_output="unanswerable", lc_output="strong LC")
    route = declining_route(cheap).configurable_fields(
        long_context_llm=ConfigurableFieldSingleOption(
            id="lc_model", options={"cheap": cheap, "strong": strong}, default="cheap"
        ),
        llm=ConfigurableField(id="llm"),
    )
    assert route.invoke("When?").answer == "cheap LC"
    assert route.with_config(configurable={"lc_model": "strong"}).invoke("When?").answer == (
        "strong LC"
    )
    other = ScriptedChatModel(rag_output="From the other model.")
    out = route.with_config(configurable={"llm": other}).invoke("When?")
    assert out.answer == "From the other model." and len(other.calls) == 1


class FlakyModel(ScriptedChatModel):
    """Fails its long-context call ``failures`` times, then works."""

    failures: int = 1

    def _raise(self, stage: str) -> None:
        if stage == "long_context" and self.failures > 0:
            self.failures -= 1
            raise ConnectionError("provider hiccup")


def test_with_retry_on_long_context_error() -> None:
    model = FlakyModel(rag_output="unanswerable", failures=1)
    route = declining_route(model)
    with pytest.raises(sr.LongContextError) as info:
        route.invoke("When was she born?")
    assert info.value.partial.rag_answer == "unanswerable"
    assert info.value.partial.usage.input_tokens == 120  # the paid RAG call is not lost
    model.failures = 1
    retrying = route.with_retry(
        stop_after_attempt=2, retry_if_exception_type=(sr.LongContextError,)
    )
    assert retrying.invoke("When was she born?").answer == "In 1901."


def test_with_fallbacks() -> None:
    broken = FlakyModel(rag_output="unanswerable", failures=10)
    primary = declining_route(broken)
    backup, _ = scenario_route(SENTINEL)
    chain = primary.with_fallbacks([backup], exceptions_to_handle=(sr.LongContextError,))
    assert chain.invoke(SENTINEL.question).answer == "In 1901."


def test_wrapped_models_work_and_keep_their_name() -> None:
    model = ScriptedChatModel(rag_output="unanswerable", model_name="configured-name")
    route = SelfRoute(
        retriever=ListRetriever(docs=scenario_docs(SENTINEL)),
        llm=model.with_retry(stop_after_attempt=2),
        document=DOCUMENT,
    )
    assert route.config.long_context_model == "configured-name"
    assert route.invoke("When?").answer == "In 1901."


def test_every_core_setting_is_a_selfroute_field() -> None:
    names = {f.name for f in dataclasses.fields(sr.RouteConfig)}
    assert names <= set(SelfRoute.model_fields), names - set(SelfRoute.model_fields)
    counter = sr.HeuristicCounter()
    budget = sr.LongContextBudget(max_calls=3)
    prices = sr.PriceTable({"m": (1.0, 2.0)})
    settings: dict[str, Any] = {
        "k": 3,
        "strict": True,
        "long_context_window": 5000,
        "answer_tokens": 99,
        "overflow": "truncate_middle",
        "chunk_words": 120,
        "on_rag_error": "raise",
        "on_retrieval_error": "raise",
        "counterfactual": False,
        "prices": prices,
        "long_context_model": "m",
        "budget": budget,
        "token_counter": counter,
        "max_question_tokens": 50,
        "retrieval_timeout_s": 2.5,
    }
    route = SelfRoute(retriever=ListRetriever(), llm=ScriptedChatModel(), **settings)
    for name, value in settings.items():
        got = getattr(route.config, name)
        assert got == value or getattr(got, "value", None) == value, name


def test_every_core_setting_reaches_the_route_config() -> None:
    """``ROUTE_CONFIG_SETTINGS`` plus the four resolved first are exactly RouteConfig's fields,
    and each passed-through setting arrives as given."""
    from langchain_selfroute._runnable import ROUTE_CONFIG_SETTINGS

    resolved = {"k", "prompts", "long_context_window", "long_context_model"}
    names = {f.name for f in dataclasses.fields(sr.RouteConfig)}
    assert set(ROUTE_CONFIG_SETTINGS) | resolved == names
    assert not set(ROUTE_CONFIG_SETTINGS) & resolved
    route = SelfRoute(
        retriever=ListRetriever(),
        llm=ScriptedChatModel(),
        deadline_s=9.0,
        k_ladder=(8,),
        grounded=True,
        speculate_below=0.25,
    )
    assert route.config.deadline_s == 9.0 and route.config.k_ladder == (8,)
    assert route.config.grounded is True and route.config.speculate_below == 0.25


def test_sentinel_and_prompts_settings() -> None:
    model = ScriptedChatModel(rag_output="NOANSWER")
    route = declining_route(model, sentinel="NOANSWER")
    out = route.invoke("When was she born?")
    assert out.route is Route.LONG_CONTEXT and out.reason is Reason.DECLINED
    assert 'write "NOANSWER"' in model.calls[0][2]
    custom = sr.Prompts(
        rag="Reply {sentinel} if unsure. retrieved from a longer document\n{context}\nQ: {question}"
    )
    model2 = ScriptedChatModel()
    route2 = SelfRoute(retriever=ListRetriever(docs=five_docs()), llm=model2, prompts=custom)
    route2.invoke("How long?")
    assert model2.calls[0][2].startswith("Reply unanswerable if unsure.")


def test_long_context_window_auto_reads_the_model_profile() -> None:
    small = ScriptedChatModel(rag_output="unanswerable", profile={"max_input_tokens": 1300})
    route = SelfRoute(
        retriever=ListRetriever(docs=scenario_docs(SENTINEL)),
        llm=small,
        document=DOCUMENT * 8,
        answer_tokens=100,
    )
    assert route.config.long_context_window == 1300
    out = route.invoke("When was Mara Holt born?")
    assert out.context is not None and out.context["truncated"]
    assert out.context["strategy"] == "fill"
    lc_prompt = small.stage_calls("long_context")[0][2]
    assert len(lc_prompt) < len(DOCUMENT * 8)
    unfitted = SelfRoute(
        retriever=ListRetriever(docs=scenario_docs(SENTINEL)),
        llm=small,
        document=DOCUMENT * 8,
        long_context_window=None,
    )
    assert unfitted.config.long_context_window is None
    assert unfitted.invoke("When?").context["truncated"] is False  # type: ignore[index]


def test_prices_and_counterfactual_model_from_the_long_context_llm() -> None:
    cheap = ScriptedChatModel(model_name="cheap-model", rag_model="cheap-model")
    strong = ScriptedChatModel(model_name="strong-model", lc_model="strong-model")
    prices = sr.PriceTable({"cheap-model": (0.1, 0.4), "strong-model": (2.5, 10.0)})
    route = SelfRoute(
        retriever=ListRetriever(docs=scenario_docs(ANSWERED)),
        llm=cheap,
        long_context_llm=strong,
        document=DOCUMENT,
        prices=prices,
    )
    out = route.invoke(ANSWERED.question)
    assert out.route is Route.RAG and not strong.calls
    assert out.cost == pytest.approx((120 * 0.1 + 6 * 0.4) / 1e6)
    assert out.long_context_tokens is not None
    assert out.long_context_cost == pytest.approx((out.long_context_tokens * 2.5 + 6 * 10.0) / 1e6)


def test_budget_refuses_the_long_context_call() -> None:
    model = ScriptedChatModel(rag_output="unanswerable")
    route = declining_route(model, budget=sr.LongContextBudget(max_calls=0))
    out = route.invoke("When?")
    assert out.reason is Reason.OVER_BUDGET and not model.stage_calls("long_context")


# usage ----------------------------------------------------------------------------------------
class CachedUsageModel(ScriptedChatModel):
    def _message(self, stage: str) -> Any:
        msg = super()._message(stage)
        msg.usage_metadata = {
            "input_tokens": 100,
            "output_tokens": 5,
            "total_tokens": 105,
            "input_token_details": {"cache_read": 64},
            "output_token_details": {"reasoning": 2},
        }
        msg.response_metadata = {}
        return msg


def test_usage_details_and_model_name_fallback() -> None:
    route = SelfRoute(
        retriever=ListRetriever(docs=five_docs()),
        llm=CachedUsageModel(model_name="gpt-4o-mini-2024-07-18"),
        document=DOCUMENT,
    )
    (step,) = route.invoke("How long?").steps
    assert step.usage.cached_input_tokens == 64 and step.usage.total_tokens == 105
    assert step.usage.extra["output_token_details"] == {"reasoning": 2}
    assert step.usage.source == "provider"
    assert step.model == "gpt-4o-mini-2024-07-18"  # provider reported none: configured name


def test_missing_provider_usage_is_estimated_and_labelled() -> None:
    model = ScriptedChatModel(rag_output="unanswerable", report_usage=False)
    route = declining_route(model)
    out = route.invoke("When?")
    assert [s.usage.source for s in out.steps] == ["tokenizer", "tokenizer"]
    assert out.usage.is_estimate and out.usage.input_tokens > 0
    assert [s.model for s in out.steps] == [RAG_MODEL, LC_MODEL]


def test_llm_returning_plain_strings() -> None:
    as_text = RunnableLambda(
        lambda messages: (
            "unanswerable"
            if "retrieved from a longer document" in messages[-1].content
            else "In 1901."
        )
    )
    route = declining_route(as_text)
    out = route.invoke("When?")
    assert out.answer == "In 1901." and out.steps[1].usage.is_estimate
    chunks = list(route.stream("When?"))
    assert "".join(c.text for c in chunks) == "In 1901."


# long-context sources -------------------------------------------------------------------------
def test_per_call_document_wins_in_auto_mode() -> None:
    model = ScriptedChatModel(rag_output="unanswerable")
    route = SelfRoute(
        retriever=ListRetriever(docs=scenario_docs(SENTINEL)), llm=model, document="FIXED DOC"
    )
    route.invoke({"question": "When?", "document": Document(page_content="PER CALL DOC")})
    assert "PER CALL DOC" in model.stage_calls("long_context")[-1][2]
    route.invoke("When?")
    assert "FIXED DOC" in model.stage_calls("long_context")[-1][2]
    route.invoke({"question": "When?", "document": ["part one", Document(page_content="part two")]})
    last = model.stage_calls("long_context")[-1][2]
    assert "part one" in last and "part two" in last


def test_input_and_fixed_modes() -> None:
    model = ScriptedChatModel(rag_output="unanswerable")
    retriever = ListRetriever(docs=scenario_docs(SENTINEL))
    by_input = SelfRoute(retriever=retriever, llm=model, long_context="input")
    with pytest.raises(sr.InvalidInputError, match="needs a 'document'"):
        by_input.invoke("When?")
    assert by_input.invoke({"question": "When?", "document": "THE DOC"}).answer == "In 1901."
    fixed = SelfRoute(retriever=retriever, llm=model, long_context="fixed", document="D")
    with pytest.raises(sr.InvalidInputError, match="remove 'document'"):
        fixed.invoke({"question": "When?", "document": "other"})


def test_no_retriever_ranks_chunks_of_the_document_with_bm25() -> None:
    filler = " ".join(f"filler{i}" for i in range(700))
    text = f"{filler} The keeper was Mara Holt of Dunmore. {filler}"
    model = ScriptedChatModel(rag_output="Mara Holt.")
    route = SelfRoute(llm=model, k=2)
    out = route.invoke({"question": "Who was the keeper?", "document": text})
    assert out.answer == "Mara Holt."
    assert "Mara Holt of Dunmore" in out.sources[0].page_content
    assert len(out.sources) <= 2 and out.sources[0].metadata["chunk_index"] == 2
    assert len(out.sources[0].page_content.split()) <= 300
    fixed = SelfRoute(llm=model, document=text, k=1)
    assert "Mara Holt of Dunmore" in fixed.invoke("Who was the keeper?").sources[0].page_content
    with pytest.raises(sr.InvalidInputError, match="no retriever and no document"):
        route.invoke("Who was the keeper?")


async def test_no_retriever_async() -> None:
    model = ScriptedChatModel(rag_output="unanswerable")
    route = SelfRoute(llm=model)
    out = await route.ainvoke({"question": "When was Mara Holt born?", "document": DOCUMENT})
    assert out.answer == "In 1901." and out.sources
    assert model.modes() == {"async"}


# errors ---------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("value", "match"),
    [
        (42, "got int"),
        (b"bytes?", "got bytes"),
        ({"q": "x"}, "no 'question' key"),  # other keys pass through, but one must ask
        ({"document": "x"}, "no 'question'"),
        ("   ", "empty"),
        ({"question": "When?", "document": 5}, "document"),
        ({"question": "When?", "document": [Document(page_content=" ")]}, "empty"),
        ({"question": "When?", "document": ["ok", 3]}, r"document'\[1\]"),
    ],
)
def test_bad_input_raises_invalid_input(value: Any, match: str) -> None:
    route, model = scenario_route(ANSWERED)
    with pytest.raises(sr.InvalidInputError, match=match):
        route.invoke(value)
    assert not model.calls


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"k": 0}, "k must be a positive integer"),
        ({"llm": 42}, "invalid SelfRoute settings"),
        ({"long_context": "fixed"}, "needs document"),
        ({"long_context": "parents"}, "needs parent_loader"),
        ({"long_context": "somewhere"}, "invalid SelfRoute settings"),
        ({"overflow": "bogus"}, "overflow must be one of"),
        ({"on_rag_error": "ignore"}, "on_rag_error must be one of"),
        ({"id_key": ""}, "id_key"),
        ({"document": 12}, "document must be"),
    ],
)
def test_bad_settings_raise_configuration_error(kwargs: dict[str, Any], match: str) -> None:
    params: dict[str, Any] = {"retriever": ListRetriever(), "llm": ScriptedChatModel(), **kwargs}
    with pytest.raises((sr.ConfigurationError, sr.InvalidInputError), match=match):
        SelfRoute(**params)


def test_rag_failure_escalates_or_raises() -> None:
    model = ScriptedChatModel(fail={"rag": TimeoutError("rag timed out")})
    route = declining_route(model)
    out = route.invoke("When?")
    assert out.route is Route.LONG_CONTEXT and out.reason is Reason.RAG_ERROR
    assert out.error is not None and "rag timed out" in out.error
    strict = declining_route(model, on_rag_error="raise")
    with pytest.raises(sr.ModelOutputError, match="rag timed out"):
        strict.invoke("When?")


def test_retrieval_failure() -> None:
    broken = ListRetriever(fail=OSError("vector store down"))
    route = SelfRoute(retriever=broken, llm=ScriptedChatModel(), document=DOCUMENT)
    out = route.invoke("When?")
    assert out.reason is Reason.RETRIEVAL_ERROR and "vector store down" in (out.error or "")
    without_lc = SelfRoute(retriever=broken, llm=ScriptedChatModel())
    with pytest.raises(sr.RetrievalError):
        without_lc.invoke("When?")


def test_retrieval_timeout_escalates() -> None:
    slow = ListRetriever(docs=five_docs(), delay_s=0.5)
    route = SelfRoute(
        retriever=slow, llm=ScriptedChatModel(), document=DOCUMENT, retrieval_timeout_s=0.05
    )
    out = route.invoke("When?")
    assert out.reason is Reason.RETRIEVAL_ERROR and "did not answer within" in (out.error or "")
    with pytest.raises(sr.ConfigurationError, match="retrieval_timeout_s"):
        SelfRoute(retriever=slow, llm=ScriptedChatModel(), retrieval_timeout_s=0)


async def test_retrieval_timeout_escalates_async() -> None:
    slow = ListRetriever(docs=five_docs(), delay_s=0.5)
    route = SelfRoute(
        retriever=slow, llm=ScriptedChatModel(), document=DOCUMENT, retrieval_timeout_s=0.05
    )
    out = await route.ainvoke("When?")
    assert out.reason is Reason.RETRIEVAL_ERROR and out.answer == "In 1901."


def test_decline_without_any_long_context_raises_with_partial() -> None:
    model = ScriptedChatModel(rag_output="unanswerable")
    route = SelfRoute(retriever=ListRetriever(docs=scenario_docs(SENTINEL)), llm=model)
    with pytest.raises(sr.LongContextError, match="no long context") as info:
        route.invoke("When?")
    assert info.value.partial.reason is Reason.DECLINED


def test_retriever_returning_garbage_is_a_clear_error() -> None:
    route = SelfRoute(
        retriever=RunnableLambda(lambda q: ["not a document"]),
        llm=ScriptedChatModel(),
        document=DOCUMENT,
    )
    with pytest.raises(sr.ConfigurationError, match="expected Document"):
        route.invoke("When?")
