"""The routing policies beyond the paper through ``SelfRoute``: structured verdicts, the k-ladder,
pre-routing and grounded mode (with what the output and the agent tool make of abstentions)."""

from __future__ import annotations

import functools
import operator
from typing import Any

import pytest
from langchain_core.documents import Document
from langchain_core.language_models import FakeListLLM, GenericFakeChatModel
from langchain_core.messages import AIMessage
from langchain_core.runnables import ConfigurableField
from langchain_core.tracers.schemas import Run

import selfroute as sr
from langchain_selfroute import TAG_LONG_CONTEXT, TAG_RAG, SelfRoute, create_selfroute_tool
from langchain_selfroute._handlers import _UNSUPPORTED
from langchain_selfroute._tool import NOT_FOUND
from selfroute import Abstention, Reason, Route, Stage
from tests.conformance.scenarios import (
    BY_NAME,
    DOCUMENT,
    LC_MODEL,
    LC_USAGE,
    PASSAGES,
    RAG_MODEL,
    RAG_USAGE,
)
from tests.unit.langchain_selfroute.fakes import (
    KRetriever,
    ListRetriever,
    ScriptedChatModel,
    VerdictChatModel,
    scenario_docs,
    scenario_route,
)
from tests.unit.langchain_selfroute.test_tracing import Collector

LAMP = "How long did Mara Holt keep the lamp?"
BORN = "When was Mara Holt born?"
YES = {"answerable": True, "answer": "Thirty-one years."}
NO = {"answerable": False, "answer": ""}
QUOTE_31 = "Mara Holt, kept the lamp at Grey Point for thirty-one years."


def verdict_route(
    rag_verdict: Any = None, *, verdict: str = "structured", **kwargs: Any
) -> tuple[SelfRoute, VerdictChatModel]:
    model = VerdictChatModel(
        rag_verdict=YES if rag_verdict is None else rag_verdict,
        verdict_text=kwargs.pop("verdict_text", ""),
    )
    route = SelfRoute(
        retriever=ListRetriever(docs=scenario_docs(BY_NAME["answered"])),
        llm=model,
        document=DOCUMENT,
        verdict=verdict,
        **kwargs,
    )
    return route, model


def streamed(route: SelfRoute, question: str) -> Any:
    return functools.reduce(operator.add, route.stream(question))


async def astreamed(route: SelfRoute, question: str) -> Any:
    return functools.reduce(operator.add, [c async for c in route.astream(question)])


def descendants(run: Run) -> list[Run]:
    out = []
    for child in run.child_runs:
        out += [child, *descendants(child)]
    return out


# structured verdicts ------------------------------------------------------------------------
@pytest.mark.parametrize("verdict", ["structured", "auto"])
def test_structured_answerable_routes_to_rag(verdict: str) -> None:
    route, model = verdict_route(YES, verdict=verdict)
    out = route.invoke(LAMP)
    assert (out.route, out.reason, out.answer) == (Route.RAG, Reason.ANSWERED, "Thirty-one years.")
    (step,) = out.steps
    assert step.structured and step.verdict == "answered" and out.rag_verdict == "answered"
    assert (step.usage.input_tokens, step.usage.output_tokens) == (120, 6)
    assert step.usage.source == "provider" and step.model == RAG_MODEL
    # LangChain's default structured output for a tool-calling model: the schema as the tool.
    ((mode, tool, choice, prompt),) = model.structured_calls
    assert (mode, tool, choice) == ("sync", "rag_verdict", "any")
    assert "answerable" in prompt and "unanswerable" not in prompt
    assert not out.abstained and not out.disputed


def test_structured_decline_routes_to_long_context() -> None:
    route, model = verdict_route(NO)
    out = route.invoke(BORN)
    assert (out.route, out.reason, out.answer) == (Route.LONG_CONTEXT, Reason.DECLINED, "In 1901.")
    assert [(s.stage, s.structured, s.verdict) for s in out.steps] == [
        (Stage.RAG, True, "sentinel"),
        (Stage.LONG_CONTEXT, False, "answered"),
    ]
    assert [s.model for s in out.steps] == [RAG_MODEL, LC_MODEL]
    assert out.usage.input_tokens == RAG_USAGE.input_tokens + LC_USAGE.input_tokens
    assert [c[1] for c in model.calls] == ["rag", "long_context"]
    assert out.disputed  # the chunks said no, the document said yes, nothing verified it


@pytest.mark.parametrize(
    ("script", "text"),
    [
        ({"answer": "Maybe."}, ""),  # a tool call without the verdict
        ({"answerable": "perhaps", "answer": "x"}, ""),  # not a boolean
        (None, '{"answerable": tru'),  # truncated JSON instead of a tool call
        (None, "```json\n{broken"),
    ],
    ids=["missing-field", "not-boolean", "truncated-json", "broken-fence"],
)
def test_garbled_structured_verdict_fails_safe_to_long_context(script: Any, text: str) -> None:
    route, _ = verdict_route([script], verdict_text=text)
    out = route.invoke(LAMP)
    assert (out.route, out.reason) == (Route.LONG_CONTEXT, Reason.EMPTY_OUTPUT)
    assert out.rag_verdict == "garbled" and out.steps[0].structured
    assert out.answer == "In 1901."
    total = streamed(route, LAMP)  # nothing of the broken verdict is shown
    assert (total.output.reason, total.output.rag_verdict) == (Reason.EMPTY_OUTPUT, "garbled")
    assert total.text == "In 1901."


def test_structured_verdict_as_json_text_is_read() -> None:
    """A provider that returns the object as (fenced) JSON text instead of a tool call."""
    route, _ = verdict_route([None], verdict_text='```json\n{"answerable": false}\n```')
    out = route.invoke(BORN)
    assert (out.route, out.reason, out.rag_verdict) == (
        Route.LONG_CONTEXT,
        Reason.DECLINED,
        "sentinel",
    )
    assert out.steps[0].structured


@pytest.mark.parametrize(
    ("text", "reason", "verdict"),
    [
        ("unanswerable", Reason.DECLINED, "sentinel"),  # a plain decline is still a decline
        ("Thirty-one years.", Reason.EMPTY_OUTPUT, "garbled"),  # prose is not the object
    ],
)
def test_prose_instead_of_the_object(text: str, reason: Reason, verdict: str) -> None:
    route, _ = verdict_route([None], verdict_text=text)
    for out in (route.invoke(LAMP), streamed(route, LAMP).output):
        assert (out.route, out.reason, out.rag_verdict) == (Route.LONG_CONTEXT, reason, verdict)


def test_structured_required_with_a_model_without_structured_output() -> None:
    fake = GenericFakeChatModel(messages=iter([AIMessage("Thirty-one years.")]))
    route = SelfRoute(
        retriever=ListRetriever(docs=scenario_docs(BY_NAME["answered"])),
        llm=fake,
        document=DOCUMENT,
        verdict="structured",
    )
    with pytest.raises(sr.ConfigurationError) as info:
        route.invoke(LAMP)
    message = str(info.value)
    assert "verdict='structured' needs a model with structured output" in message
    assert "GenericFakeChatModel" in message and "verdict='auto'" in message
    with pytest.raises(sr.ConfigurationError, match="verdict='auto'"):
        list(route.stream(LAMP))


async def test_structured_required_async_raises_too() -> None:
    route = SelfRoute(
        retriever=ListRetriever(docs=scenario_docs(BY_NAME["answered"])),
        llm=GenericFakeChatModel(messages=iter([])),
        document=DOCUMENT,
        verdict="structured",
    )
    with pytest.raises(sr.ConfigurationError, match="verdict='auto'"):
        await route.ainvoke(LAMP)


def test_auto_without_structured_output_uses_the_sentinel() -> None:
    fake = GenericFakeChatModel(messages=iter([AIMessage("unanswerable"), AIMessage("In 1901.")]))
    route = SelfRoute(
        retriever=ListRetriever(docs=scenario_docs(BY_NAME["answered"])),
        llm=fake,
        document=DOCUMENT,
        verdict="auto",
    )
    out = route.invoke(BORN)
    assert (out.route, out.reason, out.answer) == (Route.LONG_CONTEXT, Reason.DECLINED, "In 1901.")
    assert [s.structured for s in out.steps] == [False, False]
    assert _UNSUPPORTED[GenericFakeChatModel]  # probed once per class


def test_a_plain_llm_has_no_structured_output() -> None:
    def build(verdict: str, responses: list[str]) -> SelfRoute:
        return SelfRoute(
            retriever=ListRetriever(docs=scenario_docs(BY_NAME["answered"])),
            llm=FakeListLLM(responses=responses),
            document=DOCUMENT,
            verdict=verdict,
        )

    out = build("auto", ["unanswerable", "In 1901."]).invoke(BORN)
    assert (out.route, out.answer) == (Route.LONG_CONTEXT, "In 1901.")
    with pytest.raises(sr.ConfigurationError, match="FakeListLLM"):
        build("structured", ["x"]).invoke(BORN)


def test_wrapped_model_is_unwrapped_for_structured_output() -> None:
    model = VerdictChatModel(rag_verdict=NO)
    route = SelfRoute(
        retriever=ListRetriever(docs=scenario_docs(BY_NAME["answered"])),
        llm=model.bind(temperature=0).with_retry(stop_after_attempt=2),
        document=DOCUMENT,
        verdict="structured",
    )
    out = route.invoke(BORN)
    assert out.route is Route.LONG_CONTEXT and out.steps[0].structured
    assert len(model.structured_calls) == 1


async def test_structured_async_path() -> None:
    route, model = verdict_route([NO])
    out = await route.ainvoke(BORN)
    assert (out.route, out.rag_verdict) == (Route.LONG_CONTEXT, "sentinel")
    assert model.structured_calls[0][0] == "async" and model.modes() == {"async"}


@pytest.mark.parametrize(("script", "route_taken"), [(YES, Route.RAG), (NO, Route.LONG_CONTEXT)])
def test_structured_stream(script: dict[str, Any], route_taken: Route) -> None:
    route, model = verdict_route([script])
    total = streamed(route, LAMP)
    out = total.output
    assert out.route is route_taken
    assert total.text == out.answer == ("Thirty-one years." if script is YES else "In 1901.")
    assert out.steps[0].usage.input_tokens == 120 and out.steps[0].model == RAG_MODEL
    assert out.steps[0].structured  # the object survives streaming, as with invoke
    # the structured call streams too, then (for LC) a streamed long-context call
    expected = ["sync_stream"] if script is YES else ["sync_stream", "sync_stream"]
    assert [c[0] for c in model.calls] == expected


@pytest.mark.parametrize(("script", "route_taken"), [(YES, Route.RAG), (NO, Route.LONG_CONTEXT)])
async def test_structured_astream(script: dict[str, Any], route_taken: Route) -> None:
    route, model = verdict_route([script])
    total = await astreamed(route, LAMP)
    assert total.output.route is route_taken and total.text == total.output.answer
    assert total.output.steps[0].structured
    assert model.structured_calls[0][0] == "async_stream"


def test_structured_call_is_the_tagged_rag_child_run() -> None:
    route, _ = verdict_route([NO])
    tracer = Collector()
    route.invoke(BORN, {"callbacks": [tracer]})
    (root,) = tracer.roots
    assert [c.name for c in root.child_runs][1:] == [TAG_RAG, TAG_LONG_CONTEXT]
    rag = root.child_runs[1]
    assert TAG_RAG in (rag.tags or [])
    llm_runs = [r for r in descendants(rag) if r.run_type == "llm"]
    assert llm_runs and all(TAG_RAG in (r.tags or []) for r in llm_runs)
    assert "answerable" in str(llm_runs[0].inputs)


def test_structured_grounded_quotes_are_checked() -> None:
    good = {"answerable": True, "answer": "Thirty-one years.", "quotes": [QUOTE_31]}
    route, model = verdict_route([good], grounded=True)
    out = route.invoke(LAMP)
    assert (out.route, out.verified) == (Route.RAG, True)
    assert [c.quote for c in out.citations] == [QUOTE_31] and out.citations[0].found
    assert "quotes" in str(model.structured_calls[0][3])
    made_up = {"answerable": True, "answer": "Forty.", "quotes": ["She kept it for forty years."]}
    route, _ = verdict_route([made_up], grounded=True)
    out = route.invoke(LAMP)
    assert (out.route, out.reason) == (Route.LONG_CONTEXT, Reason.UNGROUNDED)


def test_structured_grounded_stream_matches_invoke() -> None:
    good = {"answerable": True, "answer": "Thirty-one years.", "quotes": [QUOTE_31]}
    route, _ = verdict_route([good], grounded=True)
    total = streamed(route, LAMP)
    assert total.output.route is Route.RAG and total.output.verified is True
    assert total.text == "Thirty-one years."


# k-ladder -----------------------------------------------------------------------------------
def ladder_docs() -> list[Document]:
    texts = [*PASSAGES, "Mara Holt was born in Dunmore in 1901.", "She retired to Dunmore."]
    return [Document(page_content=t, metadata={"doc_id": "doc-1"}) for t in texts]


def test_k_ladder_climbs_with_one_retrieval_of_the_largest_rung() -> None:
    retriever = KRetriever(docs=ladder_docs())
    model = ScriptedChatModel(rag_output="unanswerable")
    route = SelfRoute(retriever=retriever, llm=model, document=DOCUMENT, k=1, k_ladder=(2, 3))
    out = route.invoke(BORN)
    assert retriever.asked == [3]
    assert [(s.stage, s.k) for s in out.steps] == [
        (Stage.RAG, 1),
        (Stage.RAG, 2),
        (Stage.RAG, 3),
        (Stage.LONG_CONTEXT, None),
    ]
    assert out.k_used == 3 and len(out.sources) == 3
    prompts = [c[2] for c in model.stage_calls("rag")]
    assert ["Dunmore in 1901" in p for p in prompts] == [False, False, True]


def test_k_ladder_stops_at_the_first_answer() -> None:
    model = VerdictChatModel(rag_verdict=[NO, YES])
    route = SelfRoute(
        retriever=KRetriever(docs=ladder_docs()),
        llm=model,
        document=DOCUMENT,
        k=1,
        k_ladder=(2, 4),
        verdict="structured",
    )
    out = route.invoke(LAMP)
    assert out.route is Route.RAG and [s.k for s in out.steps] == [1, 2]
    assert not model.stage_calls("long_context")


def test_k_ladder_with_a_retriever_that_takes_no_k() -> None:
    retriever = ListRetriever(docs=ladder_docs())
    route = SelfRoute(
        retriever=retriever,
        llm=ScriptedChatModel(rag_output="unanswerable"),
        document=DOCUMENT,
        k=2,
        k_ladder=(4,),
    )
    out = route.invoke(BORN)
    assert retriever.calls == ["sync"]
    assert [s.k for s in out.steps if s.stage is Stage.RAG] == [2, 4]


def test_k_ladder_is_configurable_per_call() -> None:
    retriever = KRetriever(docs=ladder_docs())
    route = SelfRoute(
        retriever=retriever,
        llm=ScriptedChatModel(rag_output="unanswerable"),
        document=DOCUMENT,
        k=1,
    ).configurable_fields(k_ladder=ConfigurableField(id="k_ladder"))
    assert [s.k for s in route.invoke(BORN).steps] == [1, None]
    out = route.with_config(configurable={"k_ladder": (3,)}).invoke(BORN)
    assert [s.k for s in out.steps] == [1, 3, None] and retriever.asked == [1, 3]


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({"k": 5, "k_ladder": (3,)}, "k_ladder rungs must be integers"),
        ({"k_ladder": "20"}, "k_ladder must be a sequence of integers"),
        ({"verdict": "json"}, "verdict must be one of"),
        ({"pre_route": "global"}, "pre_route must be a selfroute.PreRoute"),
        ({"grounded": "yes"}, "grounded must be true or false"),
    ],
)
def test_bad_policy_settings_give_the_core_message(settings: dict[str, Any], message: str) -> None:
    with pytest.raises(sr.ConfigurationError, match=message):
        SelfRoute(retriever=ListRetriever(), llm=ScriptedChatModel(), **settings)


def test_policy_settings_reach_the_core_config() -> None:
    pre = sr.PreRoute(min_top_score=0.2)
    route = SelfRoute(
        retriever=ListRetriever(),
        llm=ScriptedChatModel(),
        verdict="auto",
        k_ladder=[10, 20],
        pre_route=pre,
        grounded=True,
        sentinel="NOPE",
    )
    config = route.config
    assert config.verdict is sr.VerdictMode.AUTO and config.k_ladder == (10, 20)
    assert config.pre_route is pre and config.grounded is True
    assert config.prompts.sentinel == "NOPE"
    assert config.prompts.structured_rag == sr.DEFAULT_STRUCTURED_RAG_PROMPT


# pre-routing --------------------------------------------------------------------------------
def test_global_question_skips_the_rag_model() -> None:
    cheap = ScriptedChatModel(rag_output="should not be called")
    strong = ScriptedChatModel(lc_output="A keeper's life at Grey Point.")
    route = SelfRoute(
        retriever=ListRetriever(docs=scenario_docs(BY_NAME["answered"])),
        llm=cheap,
        long_context_llm=strong,
        document=DOCUMENT,
        pre_route=sr.PreRoute(),
    )
    out = route.invoke("Summarize the whole document.")
    assert (out.route, out.reason) == (Route.LONG_CONTEXT, Reason.GLOBAL_QUESTION)
    assert cheap.calls == [] and [c[1] for c in strong.calls] == ["long_context"]
    assert [s.stage for s in out.steps] == [Stage.LONG_CONTEXT] and out.rag_verdict is None
    assert out.answer == "A keeper's life at Grey Point." and not out.disputed


async def test_weak_retrieval_skips_the_rag_model_async() -> None:
    docs = [
        Document(page_content=t, metadata={"doc_id": "doc-1", "relevance_score": 0.1})
        for t in PASSAGES
    ]
    model = ScriptedChatModel()
    route = SelfRoute(
        retriever=ListRetriever(docs=docs),
        llm=model,
        document=DOCUMENT,
        pre_route=sr.PreRoute(min_top_score=0.5),
    )
    out = await route.ainvoke(BORN)
    assert (out.route, out.reason) == (Route.LONG_CONTEXT, Reason.WEAK_RETRIEVAL)
    assert [c[1] for c in model.calls] == ["long_context"]


# speculative long context ---------------------------------------------------------------------
def weak_docs() -> list[Document]:
    return [
        Document(page_content=t, metadata={"doc_id": "doc-1", "relevance_score": 0.1})
        for t in PASSAGES
    ]


def test_speculation_answers_from_the_long_context_call_started_early() -> None:
    model = ScriptedChatModel(rag_output="unanswerable")
    route = SelfRoute(
        retriever=ListRetriever(docs=weak_docs()),
        llm=model,
        document=DOCUMENT,
        speculate_below=0.5,
    )
    out = route.invoke(BORN)
    assert (out.route, out.answer) == (Route.LONG_CONTEXT, "In 1901.")
    assert [(s.stage, s.wasted) for s in out.steps] == [
        (Stage.RAG, False),
        (Stage.LONG_CONTEXT, False),
    ]
    assert sorted(c[1] for c in model.calls) == ["long_context", "rag"]
    total = streamed(route, BORN)
    assert total.text == "In 1901." and total.output.route is Route.LONG_CONTEXT


async def test_speculation_is_cancelled_when_the_rag_step_answers() -> None:
    model = ScriptedChatModel(delay_s=0.05)
    route = SelfRoute(
        retriever=ListRetriever(docs=weak_docs()),
        llm=model,
        document=DOCUMENT,
        speculate_below=0.5,
    )
    out = await route.ainvoke(LAMP)
    assert (out.route, out.answer) == (Route.RAG, "Thirty-one years.")
    assert [(s.stage, s.wasted) for s in out.steps] == [
        (Stage.RAG, False),
        (Stage.LONG_CONTEXT, True),
    ]


# grounded mode, abstention, the output and the tool -----------------------------------------
def test_grounded_output_fields_match_the_core_dict() -> None:
    route, _ = scenario_route(BY_NAME["grounded_rag_answer"])
    out = route.invoke(LAMP)
    assert out.verified is True and out.citations and out.citations[0].found
    data = out.to_dict()
    core = out.result.to_dict()
    assert set(data) == set(core)
    for key in (
        "abstained",
        "abstention",
        "citations",
        "verified",
        "disputed",
        "k_used",
        "rag_verdict",
        "long_context_verdict",
        "unverified_answer",
    ):
        assert data[key] == core[key], key
    # the mapping holds plain values (checkpointers restore them in strict mode), the
    # attribute the typed ones
    assert out["citations"] == [c.to_dict() for c in out.citations] and out["abstained"] is False


def test_grounded_lc_fabrication_abstains() -> None:
    route, _ = scenario_route(BY_NAME["grounded_lc_fabricates"])
    out = route.invoke(BY_NAME["grounded_lc_fabricates"].question)
    assert out.abstained and out.abstention is Abstention.UNGROUNDED and out.verified is False
    assert out.answer == "unanswerable" and out.unverified_answer is not None
    assert "Shenandoah" in out.unverified_answer and not out.disputed
    assert out.to_dict()["abstention"] == "ungrounded"


@pytest.mark.parametrize(
    ("name", "why"),
    [("grounded_lc_fabricates", "could not be verified"), ("lc_declines", "do not contain it")],
)
def test_tool_says_not_found_when_the_result_abstained(name: str, why: str) -> None:
    scenario = BY_NAME[name]
    route, _ = scenario_route(scenario)
    tool = create_selfroute_tool(route, name="lighthouse_docs")
    msg = tool.invoke(
        {"type": "tool_call", "name": tool.name, "args": {"question": scenario.question}, "id": "1"}
    )
    assert msg.content.startswith(NOT_FOUND) and why in msg.content
    assert "unanswerable" not in msg.content and "Shenandoah" not in msg.content
    assert msg.artifact["abstained"] is True
    assert msg.artifact["abstention"] == scenario.abstention.value  # type: ignore[union-attr]
    assert msg.artifact["answer"] == "unanswerable"


async def test_tool_says_not_found_when_over_budget_async() -> None:
    route, _ = scenario_route(BY_NAME["sentinel"], budget=sr.LongContextBudget(max_calls=0))
    tool = create_selfroute_tool(route)
    msg = await tool.ainvoke(
        {"type": "tool_call", "name": tool.name, "args": {"question": BORN}, "id": "2"}
    )
    assert msg.content.startswith(NOT_FOUND) and "budget" in msg.content
    assert msg.artifact["abstention"] == "over_budget"


def test_tool_answers_normally_when_grounded_answer_is_verified() -> None:
    route, _ = scenario_route(BY_NAME["grounded_lc_answer"])
    tool = create_selfroute_tool(route)
    assert tool.invoke({"question": BORN}) == "In 1901."
