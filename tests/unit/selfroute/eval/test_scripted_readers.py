"""Readers in grounded and structured mode, the fabricating oracle and the latency model."""

from __future__ import annotations

import pytest

from selfroute import (
    GROUNDING_PREFIX,
    ConfigurationError,
    Stage,
    check_grounding,
    parse_structured_verdict,
    verdict_schema,
)
from selfroute._grounding import locate_quote, split_quotes
from selfroute.eval import (
    FabricatingOracleReader,
    LatencyModel,
    ModelRequest,
    OracleReader,
    load_sample,
    supporting_sentence,
)
from selfroute.flow import StructuredRequest
from tests.unit.selfroute.eval._fakes import DOCUMENT, PARAGRAPHS, item

GRANITE = item("granite", "What was the lighthouse at Grey Point built from?", ("granite blocks",))
DOG = item("dog", "What was the name of the keeper's dog?")


def _request(
    it=GRANITE,
    *,
    stage: Stage = Stage.RAG,
    grounded: bool = False,
    structured: StructuredRequest | None = None,
    context: str = DOCUMENT,
) -> ModelRequest:
    prompt = f"Passage:\n{context}\n\nQuestion: {it.question}\nAnswer:"
    if grounded:
        prompt = GROUNDING_PREFIX + prompt
    return ModelRequest(
        prompt, context, it.question, it, "self_route", stage, structured=structured
    )


async def test_oracle_quotes_the_sentence_that_holds_the_gold_span() -> None:
    gen = await OracleReader().agenerate(_request(grounded=True))
    answer, quotes = split_quotes(gen.text)
    assert answer == "granite blocks"
    assert quotes == [PARAGRAPHS[0]]
    assert check_grounding(answer, quotes, [DOCUMENT]).grounded
    plain = await OracleReader().agenerate(_request())
    assert plain.text == "granite blocks"  # no quote unless the prompt asks for one
    declined = await OracleReader().agenerate(_request(DOG, grounded=True))
    assert declined.text == "unanswerable"  # a decline quotes nothing


def test_supporting_sentence_on_real_text() -> None:
    items = load_sample()
    document = items[0].document
    answerable = [it for it in items if not it.unanswerable]
    for it in answerable:
        quote = supporting_sentence(document, it.answers[0])
        assert quote is not None, it.answers[0]
        assert check_grounding("x", [quote], [document]).grounded
        assert locate_quote(it.answers[0], quote, min_words=1) is not None
    assert supporting_sentence(document, "a phrase that is nowhere in it") is None


async def test_oracle_structured_verdict_with_and_without_quotes() -> None:
    schema = StructuredRequest("structured prompt", verdict_schema(grounded=True), required=True)
    gen = await OracleReader().agenerate(_request(structured=schema))
    assert gen.structured == {
        "answerable": True,
        "answer": "granite blocks",
        "quotes": [PARAGRAPHS[0]],
    }
    assert parse_structured_verdict(gen.structured).answer == "granite blocks"
    plain = StructuredRequest("p", verdict_schema())
    gen = await OracleReader().agenerate(_request(DOG, structured=plain))
    assert gen.structured == {"answerable": False, "answer": ""}
    assert parse_structured_verdict(gen.structured).declined
    assert OracleReader.supports_structured


async def test_oracle_declines_an_unanswerable_item_even_when_its_gold_word_appears() -> None:
    it = item("lb", "Is it answerable?", ("Unanswerable",), unanswerable=True)
    gen = await OracleReader().agenerate(_request(it, context="This is unanswerable here."))
    assert gen.text == "unanswerable"


async def test_fabricating_oracle_invents_only_in_the_long_context_call() -> None:
    reader = FabricatingOracleReader()
    rag = await reader.agenerate(_request(DOG))
    assert rag.text == "unanswerable"
    lc = await reader.agenerate(_request(DOG, stage=Stage.LONG_CONTEXT))
    assert lc.text not in ("", "unanswerable") and lc.text in DOCUMENT  # a name from the text
    right = await reader.agenerate(_request(stage=Stage.LONG_CONTEXT))
    assert right.text == "granite blocks"  # it never lies when the answer is there
    assert reader.fabricated == 1 and reader.is_oracle


async def test_fabricated_quotes_invented_or_real_but_irrelevant() -> None:
    invented = FabricatingOracleReader(quote="invented")
    gen = await invented.agenerate(_request(DOG, stage=Stage.LONG_CONTEXT, grounded=True))
    answer, quotes = split_quotes(gen.text)
    assert answer and len(quotes) == 1
    assert not check_grounding(answer, quotes, [DOCUMENT]).grounded
    irrelevant = FabricatingOracleReader(quote="irrelevant")
    gen = await irrelevant.agenerate(_request(DOG, stage=Stage.LONG_CONTEXT, grounded=True))
    answer, quotes = split_quotes(gen.text)
    assert check_grounding(answer, quotes, [DOCUMENT]).grounded  # found, yet supports nothing
    assert answer.lower() not in quotes[0].lower()


async def test_fabricating_uses_plausible_answers_and_is_seeded() -> None:
    it = item("p", "What river?", metadata={"plausible_answers": ["Tiber"]})
    gen = await FabricatingOracleReader().agenerate(_request(it, stage=Stage.LONG_CONTEXT))
    assert gen.text == "Tiber"
    many = [item(f"q{i}", f"Question number {i}?") for i in range(200)]

    async def decisions(reader: FabricatingOracleReader) -> list[bool]:
        out = []
        for it in many:
            gen = await reader.agenerate(_request(it, stage=Stage.LONG_CONTEXT))
            out.append(gen.text != "unanswerable")
        return out

    half = await decisions(FabricatingOracleReader(rate=0.5, seed=1))
    assert 60 < sum(half) < 140
    assert half == await decisions(FabricatingOracleReader(rate=0.5, seed=1))
    assert half != await decisions(FabricatingOracleReader(rate=0.5, seed=2))
    assert not any(await decisions(FabricatingOracleReader(rate=0.0)))
    with pytest.raises(ConfigurationError, match="between 0 and 1"):
        FabricatingOracleReader(rate=2)
    with pytest.raises(ConfigurationError, match="fabricated quote"):
        FabricatingOracleReader(quote="made-up")


def test_latency_model() -> None:
    model = LatencyModel.parse("default")
    assert model == LatencyModel()
    assert model.seconds(10_000, 10) == pytest.approx(0.4 + 0.2 + 0.2)
    custom = LatencyModel.parse("1, 0.001, 0.01")
    assert custom.seconds(100, 10) == pytest.approx(1.2)
    assert "s/input token" in custom.describe() and custom.to_dict()["base_s"] == 1.0
    for bad in ("1,2", "a,b,c", "-1,0,0"):
        with pytest.raises(ConfigurationError):
            LatencyModel.parse(bad)
