"""The flow's settings (:class:`RouteConfig`) and the input checks every entry point shares."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from enum import Enum
from typing import Any, Literal

from selfroute._budget import LongContextBudget
from selfroute._chunking import DEFAULT_CHUNK_WORDS
from selfroute._errors import ConfigurationError
from selfroute._fitting import OverflowStrategy
from selfroute._flow._tracing import check_tracing
from selfroute._preroute import PreRoute
from selfroute._pricing import PriceTable
from selfroute._prompts import Prompts
from selfroute._question import validate_question
from selfroute._settings import (
    CliOption,
    EvalOption,
    eval_ladder,
    eval_number,
    eval_positive_int,
    eval_regex,
    setting,
)
from selfroute._settings import (
    parse_bool as _bool,
)
from selfroute._settings import (
    parse_finite as _finite,
)
from selfroute._settings import (
    parse_ladder as _ladder,
)
from selfroute._settings import (
    parse_non_negative_int as _non_negative_int,
)
from selfroute._settings import (
    parse_positive_float as _positive_float,
)
from selfroute._settings import (
    parse_positive_int as _positive_int,
)
from selfroute._settings import (
    parse_regex as _regex,
)
from selfroute._settings import (
    parse_text as _text,
)
from selfroute._structured import VerdictMode
from selfroute._tokens import TokenCounter, default_token_counter
from selfroute._verdict import DeclineDetector, DeclinePattern, check_detector, strip_reasoning

__all__ = ["OnError", "RouteConfig", "clean_answer", "validate_question"]

_QUERY = ("ask", "chat", "mcp", "serve")
_VERDICT = ("ask", "chat", "verdicts", "mcp", "serve")
#: The argument groups of ``selfroute eval --help`` that route settings join.
_RUN = "run"
_POLICY = "policy"


def _prices_from_cli(values: Mapping[str, Any]) -> PriceTable | None:
    if not values["prices"]:
        return None
    from selfroute.eval._prices import parse_prices

    return parse_prices(values["prices"])


def _budget_from_cli(values: Mapping[str, Any]) -> LongContextBudget | None:
    calls, tokens = values["max_lc_calls"], values["max_lc_tokens"]
    if calls is None and tokens is None:
        return None
    return LongContextBudget(max_calls=calls, max_tokens=tokens)


def _pre_route_from_cli(values: Mapping[str, Any]) -> PreRoute | None:
    if not values["pre_route"] and values["min_top_score"] is None:
        return None
    return PreRoute(
        global_questions=bool(values["pre_route"]), min_top_score=values["min_top_score"]
    )


def _detector_from_cli(values: Mapping[str, Any]) -> DeclineDetector | None:
    pattern = values["decline_pattern"]
    return DeclinePattern(pattern) if pattern else None


class OnError(str, Enum):
    """What to do when the RAG model call or the retriever fails."""

    LONG_CONTEXT = "long_context"
    """Escalate to long context and record the error in the result (default)."""
    RAISE = "raise"
    """Raise at once."""


@dataclass(frozen=True)
class RouteConfig:
    """Settings of the flow.

    Attributes:
        k: Chunks to retrieve (5 in the paper).
        prompts: Prompt templates and the sentinel.
        strict: Only the sentinel counts as a decline (natural refusals are taken as answers).
        long_context_window: The LC model's context window in tokens; ``None`` sends the whole
            document unfitted.
        answer_tokens: Tokens reserved in the window for the answer.
        overflow: What to do when the document does not fit: ``fill`` (default),
            ``truncate_middle`` or ``error``.
        chunk_words: Chunk size used when fitting with ``fill``.
        on_rag_error: ``long_context`` (escalate, default) or ``raise``.
        on_retrieval_error: ``long_context`` (escalate when a long context exists, default) or
            ``raise``.
        counterfactual: Price always-LC on RAG-routed calls (loads the long context to count it).
        prices: Optional price table for money.
        long_context_model: Model name used to price the counterfactual when no LC call ran.
        budget: Optional :class:`~selfroute.LongContextBudget`.
        token_counter: Counter for pre-call counts; defaults to tiktoken ``o200k_base`` offline.
        max_question_tokens: Reject questions longer than this (``None``: no limit).
        retrieval_timeout_s: Give up on the retriever after this many seconds and treat it as a
            retrieval failure (escalate or raise per ``on_retrieval_error``). Guards against a
            vector store that accepts connections but never answers (the ``chromadb`` HTTP client
            has no timeout of its own). It bounds every store call: loading the long context
            (parent documents) too, and the counterfactual's load (best effort: at most
            2 s once any time limit is set; pricing then stays unknown). ``None`` (default): no
            limit.
        deadline_s: The whole call's time limit, enforced by the drivers across every step
            (retrieval, each model call, loading the long context, streaming): a step still
            running when it passes is abandoned (async: cancelled) and the call raises the
            stage's error (:class:`~selfroute.RetrievalError`, :class:`~selfroute.ModelOutputError`,
            or :class:`~selfroute.LongContextError` with the partial result), with
            ``context["deadline_s"]``; it never escalates. ``None`` (default): no limit.
        verdict: How the RAG step declines: ``sentinel`` (the paper's word, default),
            ``structured`` (an ``{answerable, answer}`` object through structured output or tool
            calling; an error if the model cannot) or ``auto`` (structured when the model
            supports it).
        k_ladder: Larger retrievals to try, in order, before long context while the RAG step
            declines (``k=5, k_ladder=(20,)``: 5 chunks, then 20, then the whole document). Each
            rung's call is recorded; the first answer wins.
        pre_route: Skip the RAG step for predictably futile questions (global questions, weak
            retrieval); see :class:`~selfroute.PreRoute`. ``None`` (default): off.
        grounded: Ask both steps to quote the sentences that support the answer and check the
            quotes against what the model was given: an unverified RAG answer escalates
            (``ungrounded``), an unverified long-context answer abstains.
        speculate_below: Speculative long context: when the best retrieved chunk scores under
            this (weak evidence), start the long-context call at the same time as the RAG step
            and cancel it if the RAG step answers. Saves the RAG step's latency on questions that
            escalate; costs the cancelled call's tokens (reported as ``wasted`` steps) on those
            that do not. ``None`` (default): off.
        stream_hold_chars: Streaming: besides text that still *opens* like a decline, hold the
            RAG answer until the decline detector reads it as an answer -- its first sentence
            complete, or this many characters with no decline in sight -- so that a decline
            whose opening looks like an answer ("Her birth year is not mentioned ...") is not
            shown and then retracted. Costs that much time to the first token of every answer.
            ``0`` (default): release as soon as the opening cannot be a decline.
        decline_detector: Your own decline detection beside the rules:
            ``detector(text, question)`` is asked about each output the rules read as an answer
            -- the RAG answer, the long-context answer (a decline is an abstention) and eval's
            baselines -- and returns ``True`` for a decline (``False`` or ``None``: the answer
            stands). It adds declines, never removes one (with ``strict=True`` the sentinel and
            your detector decide alone). See :data:`~selfroute.DeclineDetector` and
            ``docs/verdict.md``. An exception it raises is a
            :class:`~selfroute.ConfigurationError`, not a routing signal. ``None`` (default): the
            rules alone.
        tracing: OpenTelemetry spans of every routed question (OpenInference conventions, read by
            Arize Phoenix, Langfuse and other OTLP backends; see ``docs/tracing.md``): ``True``
            sends them to the global tracer provider, a ``TracerProvider`` to that one.
            ``False`` (default): off, nothing is emitted and ``opentelemetry`` is not imported.
            Needs the ``tracing`` extra (``opentelemetry-api``); your application brings the SDK
            and exporter.
    """

    # fmt: off
    k: int = setting(5, help="chunks retrieved for the RAG step", adapter=False, cli=(
        CliOption("k", "--k", _positive_int, 5, "chunks retrieved for the RAG step", _QUERY, metavar="N", aliases=("-k",)),
    ))
    prompts: Prompts = setting(default_factory=Prompts, help="prompt templates and the sentinel", adapter=False)
    strict: bool = setting(False, help="only the sentinel counts as a decline", cli=(
        CliOption("strict", "--strict", _bool, False, "only the word 'unanswerable' counts as a decline", _VERDICT, boolean=True),
    ), eval=(
        EvalOption("strict", "--strict", _RUN, switch=True, help="only the sentinel counts as a decline in Self-Route's first step"),
    ))
    long_context_window: int | None = setting(None, help="the LC model's context window in tokens (None: the document unfitted)", adapter=False, cli=(
        CliOption("lc_window", "--lc-window", _positive_int, None, "long-context window in tokens; the document is fitted into it", _QUERY, metavar="TOKENS", default_doc="the model's known window, else unfitted"),
    ), eval=(
        EvalOption("window", "--window", _RUN, eval_positive_int, help="long-context window in tokens (documents are fitted into it)"),
    ))
    answer_tokens: int = setting(1024, help="tokens reserved in the window for the answer")
    overflow: OverflowStrategy | str = setting(OverflowStrategy.FILL, help="what to do when the document does not fit", kwarg_type=str, cli=(
        CliOption("overflow", "--overflow", _text, "fill", "when the document does not fit: fill (most relevant chunks), truncate_middle, error", _QUERY, choices=("fill", "truncate_middle", "error")),
    ), eval=(
        EvalOption("overflow", "--overflow", _RUN, default="fill", choices=("fill", "truncate_middle", "error")),
    ))
    chunk_words: int = setting(DEFAULT_CHUNK_WORDS, help="chunk size used when fitting with fill", eval=(
        EvalOption("chunk_words", "--chunk-words", _RUN, eval_positive_int, DEFAULT_CHUNK_WORDS),
    ))
    on_rag_error: OnError | str = setting(OnError.LONG_CONTEXT, help="long_context (escalate) or raise", kwarg_type=str)
    on_retrieval_error: OnError | str = setting(OnError.LONG_CONTEXT, help="long_context (escalate) or raise", kwarg_type=str)
    counterfactual: bool = setting(True, answers=False, help="price always-LC on RAG-routed calls")
    prices: PriceTable | None = setting(None, answers=False, help="price table for money", from_cli=_prices_from_cli, cli=(
        CliOption("prices", "--prices", _text, None, "MODEL=IN/OUT per million tokens (comma separated) or a JSON file, for money in the report", _QUERY, metavar="SPEC", default_doc="no money shown"),
    ))
    long_context_model: str | None = setting(None, answers=False, help="model name used to price the counterfactual", adapter=False)
    budget: LongContextBudget | None = setting(None, help="caps on long-context calls and tokens", from_cli=_budget_from_cli, cli=(
        CliOption("max_lc_calls", "--max-lc-calls", _non_negative_int, None, "at most this many long-context calls in this run (one ask, all questions of ask --batch, one chat session); a question past it keeps its RAG answer or abstains (over_budget)", _QUERY, metavar="N", default_doc="no limit"),
        CliOption("max_lc_tokens", "--max-lc-tokens", _non_negative_int, None, "at most this many long-context input tokens in this run; a long-context call that would pass it is not made (over_budget)", _QUERY, metavar="TOKENS", default_doc="no limit"),
    ))
    token_counter: TokenCounter | None = setting(None, help="counter for pre-call token counts", kwarg_type=Any)
    max_question_tokens: int | None = setting(None, help="reject questions longer than this many tokens", cli=(
        CliOption("max_question_tokens", "--max-question-tokens", _positive_int, None, "refuse a question longer than this many tokens before any call (never truncated)", _QUERY, metavar="TOKENS", default_doc="no limit"),
    ))
    retrieval_timeout_s: float | None = setting(None, answers=False, help="seconds per store call", cli=(
        CliOption("retrieval_timeout", "--retrieval-timeout", _positive_float, 30.0, "seconds per store call (retrieval, loading the documents); a store that does not answer is a store error", _QUERY, metavar="S"),
    ))
    deadline_s: float | None = setting(None, answers=False, help="the whole call's time limit in seconds", cli=(
        CliOption("deadline", "--deadline", _positive_float, None, "seconds for the whole question, across every step (retrieval, both model calls, streaming); past it the question fails", _QUERY, metavar="S", default_doc="none"),
    ))
    verdict: VerdictMode | str = setting(VerdictMode.SENTINEL, help="how the RAG step declines", kwarg_type=Literal["sentinel", "structured", "auto"] | VerdictMode, checked=False, cli=(
        CliOption("verdict", "--verdict", _text, "sentinel", "how the RAG step declines: the sentinel word, a structured {answerable, answer} object, or structured when the model supports it", _QUERY, choices=("sentinel", "structured", "auto")),
    ), eval=(
        EvalOption("verdict", "--verdict", _POLICY, default="sentinel", choices=("sentinel", "structured", "auto"), help="how the RAG step declines: the sentinel word, a structured {answerable, answer} object (error if the reader cannot), or structured when supported"),
    ))
    k_ladder: tuple[int, ...] = setting((), help="larger retrievals to try before long context", checked=False, from_cli=lambda values: tuple(values["k_ladder"] or ()), cli=(
        CliOption("k_ladder", "--k-ladder", _ladder, (), "larger retrievals to try, in order, while the RAG step declines, before the long context (e.g. 20: k chunks, then 20)", _QUERY, metavar="K[,K...]", default_doc="none"),
    ), eval=(
        EvalOption("k_ladder", "--k-ladder", _POLICY, eval_ladder, metavar="K[,K...]", help="larger retrievals to try before long context while the RAG step declines (e.g. 20: k chunks, then 20, then the whole document)"),
    ))
    pre_route: PreRoute | None = setting(None, help="skip the RAG step for predictably futile questions", checked=False, from_cli=_pre_route_from_cli, cli=(
        CliOption("pre_route", "--pre-route", _bool, False, "send global questions ('summarise the whole ...', 'overall') straight to the long context", _QUERY, toml_key="pre_route.global_questions", boolean=True),
        CliOption("min_top_score", "--min-top-score", _finite, None, "send questions whose best retrieved chunk scores under this straight to the long context (on the retriever's score scale; `selfroute calibrate` picks it)", _QUERY, metavar="X", default_doc="off", toml_key="pre_route.min_top_score"),
    ), eval=(
        EvalOption("pre_route", "--pre-route", _POLICY, switch=True, help="send global questions ('summarise the whole ...') straight to long context"),
        EvalOption("min_top_score", "--min-top-score", _POLICY, eval_number, metavar="X", help="send questions whose best retrieved chunk scores under X straight to long context (calibrate X with `selfroute calibrate`)"),
    ))
    grounded: bool = setting(False, help="quote and check the supporting sentences", checked=False, from_cli=lambda values: bool(values["grounded"]), cli=(
        CliOption("grounded", "--grounded", _bool, False, "answers quote their supporting sentences, checked against the text: an unverified RAG answer escalates, an unverified long-context answer is withheld", _QUERY, boolean=True),
    ), eval=(
        EvalOption("grounded", "--grounded", _POLICY, switch=True, help="grounded mode for self-route too (self-route-grounded always is): answers quote their support, and unverified answers escalate or abstain"),
    ))
    speculate_below: float | None = setting(None, answers=False, help="start the long-context call alongside the RAG step under this top score", checked=False, cli=(
        CliOption("speculate_below", "--speculate-below", _finite, None, "start the long-context call alongside the RAG call when the best retrieved chunk scores under this (saves the RAG latency on questions that escalate; a cancelled call's tokens are reported as wasted)", _QUERY, metavar="X", default_doc="off"),
    ), eval=(
        EvalOption("speculate_below", "--speculate-below", _POLICY, eval_number, metavar="X", help="start the long-context call alongside the RAG call when the best retrieved chunk scores under X; cancelled (its tokens still counted) when the RAG step answers"),
    ))
    stream_hold_chars: int = setting(0, answers=False, help="streaming: hold the RAG answer this many characters", checked=False)
    decline_detector: DeclineDetector | None = setting(None, help="your own decline detection beside the rules", checked=False, from_cli=_detector_from_cli, cli=(
        CliOption("decline_pattern", "--decline-pattern", _regex, None, "a regular expression (case-insensitive) that also marks an answer as a decline, for a model that declines in words the rules miss (e.g. '^keine angaben')", _VERDICT, metavar="REGEX", default_doc="none"),
    ), eval=(
        EvalOption("decline_pattern", "--decline-pattern", _POLICY, eval_regex, metavar="REGEX", help="a regular expression (case-insensitive) that also marks an answer as a decline, for a reader that declines in words the rules miss; used for every method's answers"),
    ))
    tracing: Any = setting(False, answers=False, help="OpenTelemetry spans: True (global tracer provider), a TracerProvider, or False", checked=False, from_cli=lambda values: bool(values["trace"]), cli=(
        CliOption("trace", "--trace", _bool, False, "OpenTelemetry spans of each question (OpenInference conventions) to the global tracer provider: run under opentelemetry-instrument with OTEL_EXPORTER_OTLP_* set to send them to Phoenix, Langfuse or a collector (needs the tracing extra)", _QUERY, boolean=True),
    ))
    # fmt: on

    def __post_init__(self) -> None:
        check_detector(self.decline_detector)
        check_tracing(self.tracing)
        hold = self.stream_hold_chars
        if not isinstance(hold, int) or isinstance(hold, bool) or hold < 0:
            raise ConfigurationError(f"stream_hold_chars must be an integer >= 0, got {hold!r}")
        if not isinstance(self.k, int) or isinstance(self.k, bool) or self.k < 1:
            raise ConfigurationError(f"k must be a positive integer, got {self.k!r}")
        ladder = self.k_ladder
        if ladder is None:
            ladder = ()
        if isinstance(ladder, (str, bytes)) or not isinstance(ladder, Iterable):
            raise ConfigurationError(f"k_ladder must be a sequence of integers, got {ladder!r}")
        ladder = tuple(ladder)
        previous = self.k
        for rung in ladder:
            if not isinstance(rung, int) or isinstance(rung, bool) or rung <= previous:
                raise ConfigurationError(
                    f"k_ladder rungs must be integers, each larger than the one before and than "
                    f"k={self.k}; got {ladder!r}"
                )
            previous = rung
        object.__setattr__(self, "k_ladder", ladder)
        if self.pre_route is not None and not isinstance(self.pre_route, PreRoute):
            raise ConfigurationError(
                f"pre_route must be a selfroute.PreRoute or None, got {type(self.pre_route).__name__}"
            )
        spec = self.speculate_below
        if spec is not None and (isinstance(spec, bool) or not isinstance(spec, (int, float))):
            raise ConfigurationError(f"speculate_below must be a number or None, got {spec!r}")
        if not isinstance(self.grounded, bool):
            raise ConfigurationError(f"grounded must be true or false, got {self.grounded!r}")
        try:
            object.__setattr__(self, "verdict", VerdictMode(self.verdict))
        except ValueError:
            raise ConfigurationError(
                f"verdict must be one of {[m.value for m in VerdictMode]}, got {self.verdict!r}"
            ) from None
        if self.long_context_window is not None and (
            not isinstance(self.long_context_window, int) or self.long_context_window < 1
        ):
            raise ConfigurationError(
                f"long_context_window must be a positive integer or None, got {self.long_context_window!r}"
            )
        for name in ("retrieval_timeout_s", "deadline_s"):
            timeout = getattr(self, name)
            if timeout is not None and (
                isinstance(timeout, bool)
                or not isinstance(timeout, (int, float))
                or not timeout > 0
                or timeout != timeout
            ):
                raise ConfigurationError(
                    f"{name} must be a positive number or None, got {timeout!r}"
                )
        if not isinstance(self.answer_tokens, int) or self.answer_tokens < 0:
            raise ConfigurationError(f"answer_tokens must be >= 0, got {self.answer_tokens!r}")
        for name in ("overflow", "on_rag_error", "on_retrieval_error"):
            value = getattr(self, name)
            enum: type[Enum] = OverflowStrategy if name == "overflow" else OnError
            try:
                object.__setattr__(self, name, enum(value))
            except ValueError:
                raise ConfigurationError(
                    f"{name} must be one of {[e.value for e in enum]}, got {value!r}"
                ) from None
        if not isinstance(self.prompts, Prompts):
            raise ConfigurationError("prompts must be a selfroute.Prompts")

    @property
    def counter(self) -> TokenCounter:
        """The token counter in use."""
        return self.token_counter or default_token_counter()

    @property
    def rungs(self) -> tuple[int, ...]:
        """The retrieval sizes the RAG step tries, in order: ``(k, *k_ladder)``."""
        return (self.k, *self.k_ladder)


def clean_answer(text: str) -> str:
    """Strip reasoning blocks and surrounding white space from a long-context answer."""
    body, _ = strip_reasoning(text or "")
    return body.strip()
