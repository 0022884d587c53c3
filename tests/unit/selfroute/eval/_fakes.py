"""Scripted readers and a small multi-chunk document for the eval unit tests."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from selfroute import Generation, Usage
from selfroute.eval import EvalItem, ModelRequest, OracleReader

# Six 20-word paragraphs: with chunk_words=20 each is one chunk.
PARAGRAPHS = [
    "The lighthouse at Grey Point was built from granite blocks quarried on the island "
    "itself during the long summer of 1851.",
    "Its keeper Mara Holt trimmed the wick every night and wound the clockwork that turned "
    "the great lens until dawn came.",
    "Supply boats came from Dunmore harbour each fortnight carrying oil, flour, letters and "
    "sometimes a visiting inspector from the board.",
    "During the storm of 1938 the boats could not land for six weeks and the family lived "
    "on dried fish and potatoes.",
    "An electric lamp replaced the oil burner in 1947, after which the station needed no "
    "resident keeper and was automated entirely.",
    "The cottage beside the tower later became a small museum displaying the keeper's log "
    "books, tools, lenses and faded photographs.",
]
DOCUMENT = "\n\n".join(PARAGRAPHS)


def item(item_id: str, question: str, answers: tuple[str, ...] = (), **kw: object) -> EvalItem:
    kw.setdefault("unanswerable", not answers)
    return EvalItem(
        id=item_id,
        question=question,
        document=DOCUMENT,
        answers=answers,
        doc_id="grey-point",
        **kw,  # type: ignore[arg-type]
    )


ITEMS = [
    # answer sits in the chunk the question matches: RAG can answer
    item("in-chunk", "What was the lighthouse at Grey Point built from?", ("granite blocks",)),
    # answer ("1947") sits in a chunk sharing no words with the question: needs the fallback
    item("elsewhere", "When did Mara Holt's clockwork job end?", ("1947",)),
    # not in the document at all
    item("impossible", "What was the name of the keeper's dog?"),
]


class ScriptedReader:
    """A cacheable reader answering like the oracle, counting and optionally failing calls."""

    is_oracle = False
    cacheable = True

    def __init__(
        self,
        name: str = "scripted",
        *,
        fail: Callable[[ModelRequest], bool] | None = None,
        usage: bool = True,
        delay_s: float = 0.0,
    ) -> None:
        self.name = self.model_name = name
        self._oracle = OracleReader()
        self.fail = fail
        self.usage = usage
        self.delay_s = delay_s
        self.requests: list[ModelRequest] = []
        self.in_flight = 0
        self.max_in_flight = 0

    def cache_identity(self) -> str:
        return f"scripted:{self.name}"

    async def agenerate(self, request: ModelRequest) -> Generation:
        self.requests.append(request)
        self.in_flight += 1
        self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            if self.delay_s:
                await asyncio.sleep(self.delay_s)
            if self.fail is not None and self.fail(request):
                raise RuntimeError(f"scripted failure for {request.item.id}/{request.method}")
            text = self._oracle.answer_for(request.item, request.context)
            usage = Usage.of(len(request.prompt.split()), len(text.split())) if self.usage else None
            return Generation(text=text, usage=usage, model=f"{self.name}-2024")
        finally:
            self.in_flight -= 1
