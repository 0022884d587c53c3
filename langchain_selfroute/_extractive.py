"""A LangChain chat model backed by selfroute's offline :class:`~selfroute.ExtractiveReader`."""

from __future__ import annotations

from typing import Any

from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatResult

from selfroute._extractive import ExtractiveReader

__all__ = ["ExtractiveChatModel"]


class ExtractiveChatModel(BaseChatModel):
    """A keyless, offline chat model that copies the best-matching sentence of its prompt, or
    writes "unanswerable" when no sentence covers enough of the question.

    A **toy-quality reader** for demos, tutorials and air-gapped tries (``selfroute ask --model
    offline``): it needs no key, no download and no network, and it does decline, so the whole
    Self-Route loop is visible. It reports no token usage, so Self-Route counts the tokens
    locally and labels them as such.

    Args:
        min_coverage: Share of the question's term weight one sentence must contain (0..1).
        max_words: Longest answer in words.

    Example:
        >>> from langchain_selfroute import ExtractiveChatModel, SelfRoute
        >>> route = SelfRoute.from_texts(texts, llm=ExtractiveChatModel())  # doctest: +SKIP
    """

    min_coverage: float = 0.5
    max_words: int = 60
    model_name: str = "offline-extractive"

    @property
    def _llm_type(self) -> str:
        return "selfroute-extractive"

    @property
    def _identifying_params(self) -> dict[str, Any]:
        return {
            "model_name": self.model_name,
            "min_coverage": self.min_coverage,
            "max_words": self.max_words,
        }

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        reader = ExtractiveReader(min_coverage=self.min_coverage, max_words=self.max_words)
        prompt = "\n\n".join(str(m.text) for m in messages)
        message = AIMessage(
            content=reader(prompt), response_metadata={"model_name": self.model_name}
        )
        return ChatResult(generations=[ChatGeneration(message=message)])
