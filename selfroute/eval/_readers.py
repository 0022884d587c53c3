"""Readers: what answers the eval prompts. A calibrated oracle, or any LangChain chat model."""

from __future__ import annotations

import json
import os
import random
import re
import unicodedata
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from selfroute._errors import ConfigurationError, MissingDependencyError
from selfroute._flow import Generation, StructuredRequest
from selfroute._grounding import QUOTE_LABEL, locate_quote
from selfroute._prompts import DEFAULT_SENTINEL, GROUNDING_PREFIX
from selfroute._redact import register_model_secrets
from selfroute._result import Stage
from selfroute._structured import verdict_schema
from selfroute._tokens import TokenCounter, count_in_prompt, default_token_counter
from selfroute._usage import Usage
from selfroute._verdict import parse_verdict
from selfroute.eval._data import EvalItem

__all__ = [
    "FABRICATED_QUOTES",
    "ChatModelReader",
    "FabricatingOracleReader",
    "LatencyModel",
    "ModelRequest",
    "OracleReader",
    "Reader",
    "chat_model_from_spec",
    "supporting_sentence",
]


@dataclass(frozen=True)
class ModelRequest:
    """One prompt the harness needs answered.

    Attributes:
        prompt: The full prompt (sent as one user message).
        context: The passage(s) or document inside the prompt.
        question: The question.
        item: The eval item (gives the oracle its gold answers).
        method: ``lc``, ``rag``, ``self_route`` or ``self_route_grounded``.
        stage: ``rag`` or ``long_context``.
        sentinel: The decline word the prompt asks for (Self-Route's RAG step), else ``None``.
        structured: Set when the reader is asked for a structured verdict (``prompt`` is then
            the structured prompt): answer with :attr:`~selfroute.Generation.structured` holding
            an object matching ``structured.schema``. Only sent to readers whose
            ``supports_structured`` attribute is true.
        grounded: Grounded mode: the prompt asks for the supporting sentences (``Quote:`` lines
            after the answer, or a ``quotes`` field of the structured object).
        k: For Self-Route's RAG steps, how many chunks the prompt shows (one call per k-ladder
            rung).
    """

    prompt: str
    context: str
    question: str
    item: EvalItem
    method: str
    stage: Stage
    sentinel: str | None = None
    structured: StructuredRequest | None = None
    grounded: bool = False
    k: int | None = None

    @property
    def wants_quotes(self) -> bool:
        """Whether the prompt asks for supporting quotes (grounded mode)."""
        if self.structured is not None:
            return "quotes" in (self.structured.schema.get("properties") or {})
        return self.grounded or self.prompt.startswith(GROUNDING_PREFIX)


@runtime_checkable
class Reader(Protocol):
    """Answers prompts for the harness.

    Attributes:
        name: Shown in reports.
        model_name: Used to price calls with a :class:`~selfroute.PriceTable`.
        cacheable: Whether answers may be stored in the response cache.
        is_oracle: True for readers that look at the gold answers (flagged in every output).

    Optional attributes (read with ``getattr``): ``supports_structured`` (the reader answers
    structured-verdict requests, see :attr:`ModelRequest.structured`) and ``latency_model`` (a
    :class:`LatencyModel`: the harness then reports simulated latency instead of wall time).
    """

    name: str
    model_name: str
    cacheable: bool
    is_oracle: bool

    def cache_identity(self) -> str:
        """Everything that changes the answer besides the prompt (model, endpoint, params)."""
        ...

    async def agenerate(self, request: ModelRequest) -> Generation:
        """Answer ``request``."""
        ...


_ARTICLES = re.compile(r"\b(a|an|the)\b")


#: Every ASCII punctuation or symbol byte turned into a space (``bytes.translate``).
_ASCII_MARKS = bytes(
    0x20 if unicodedata.category(chr(b))[0] in "PS" else b for b in range(128)
) + bytes(range(128, 256))
_ASCII = bytes(range(128))
#: ASCII characters that are neither word characters, white space nor marks (controls): kept
#: by ``bytes.translate(None, _ASCII_ODD)`` only when absent.
_ASCII_ODD = bytes(
    b for b in range(128) if not (chr(b).isalnum() or chr(b).isspace() or _ASCII_MARKS[b] == 0x20)
)
_ARTICLE_WORDS = (" a ", " an ", " the ")
#: Above this many distinct non-ASCII marks, they are blanked in one ``str.translate`` pass.
_REPLACE_UP_TO = 16


def match_key(text: str) -> str:
    """Text normalised for "does the answer appear here": lower case, every Unicode punctuation
    or symbol character turned into a space, articles dropped, white space collapsed.

    Computed in the UTF-8 bytes where it can be (an ASCII byte is never part of a multi-byte
    sequence): ASCII marks blanked with ``bytes.translate``, each distinct non-ASCII mark with
    ``str.replace``, and the articles dropped as words when every other character is a word
    character or white space (then ``\\b`` falls only at white space); the same text as a
    per-character ``str.translate`` and a regular expression, several times faster."""
    folded = unicodedata.normalize("NFKC", text.lower())
    raw = folded.encode("utf-8", "surrogatepass")
    others = set(raw.translate(None, _ASCII).decode("utf-8", "surrogatepass"))
    marks = [ch for ch in others if unicodedata.category(ch)[0] in "PS"]
    blanked = raw.translate(_ASCII_MARKS).decode("utf-8", "surrogatepass")
    if len(marks) > _REPLACE_UP_TO:
        blanked = blanked.translate({ord(ch): " " for ch in marks})
    else:
        for ch in marks:
            blanked = blanked.replace(ch, " ")
    if len(raw.translate(None, _ASCII_ODD)) == len(raw) and all(
        ch.isalnum() or ch.isspace() for ch in others.difference(marks)
    ):
        spaced = f" {' '.join(blanked.split())} "
        for article in _ARTICLE_WORDS:
            while article in spaced:  # " a a " needs two passes
                spaced = spaced.replace(article, " ")
        return spaced[1:-1]
    return " ".join(_ARTICLES.sub(" ", blanked).split())


@dataclass(frozen=True)
class LatencyModel:
    """Simulated latency of a model call: ``base_s + per_input_token_s * input_tokens +
    per_output_token_s * output_tokens``.

    Scripted readers answer in microseconds, so wall time says nothing about a routing policy.
    This model makes latency comparisons deterministic and meaningful: a policy that skips a RAG
    call saves ``base_s`` plus that call's prefill; one that adds a k-ladder rung pays them. The
    defaults are illustrative, of the order of a hosted mid-size model (0.4 s to first token,
    50,000 input tokens/s of prefill, 50 output tokens/s); they are not a measurement. Reports
    label such latency as simulated.

    Attributes:
        base_s: Fixed cost per call (network, queueing, first token).
        per_input_token_s: Seconds per input token (prefill).
        per_output_token_s: Seconds per output token (decoding).
    """

    base_s: float = 0.4
    per_input_token_s: float = 0.00002
    per_output_token_s: float = 0.02

    def __post_init__(self) -> None:
        for name in ("base_s", "per_input_token_s", "per_output_token_s"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
                raise ConfigurationError(f"latency {name} must be a number >= 0, got {value!r}")

    @classmethod
    def parse(cls, text: str) -> LatencyModel:
        """``"BASE,PER_INPUT_TOKEN,PER_OUTPUT_TOKEN"`` in seconds (``"default"``: the defaults).

        Raises:
            ConfigurationError: Not three numbers.
        """
        if text.strip().lower() in ("", "default"):
            return cls()
        parts = [p.strip() for p in text.split(",")]
        try:
            values = [float(p) for p in parts]
        except ValueError:
            values = []
        if len(values) != 3:
            raise ConfigurationError(
                f"latency model must be BASE,PER_INPUT_TOKEN,PER_OUTPUT_TOKEN in seconds "
                f"(e.g. 0.4,0.00002,0.02), got {text!r}"
            )
        return cls(*values)

    def seconds(self, input_tokens: int, output_tokens: int) -> float:
        """The simulated latency of one call."""
        return (
            self.base_s
            + self.per_input_token_s * input_tokens
            + self.per_output_token_s * output_tokens
        )

    def describe(self) -> str:
        """``0.4 s + 2e-05 s/input token + 0.02 s/output token``."""
        return (
            f"{self.base_s:g} s + {self.per_input_token_s:g} s/input token + "
            f"{self.per_output_token_s:g} s/output token"
        )

    def to_dict(self) -> dict[str, float]:
        """Plain-dict form."""
        return {
            "base_s": self.base_s,
            "per_input_token_s": self.per_input_token_s,
            "per_output_token_s": self.per_output_token_s,
        }


# A sentence ends at . ! or ? (optionally followed by closing quotes or brackets) and white
# space, or at a line break.
_SENTENCE_END = re.compile(r"[.!?][\"'”’)\]]*\s+|\n")
_WINDOW = 1500  # characters searched for a sentence boundary on each side of a span
_MAX_QUOTE = 600  # longer "sentences" (text without punctuation) are cut around the span


def _snap(context: str, start: int, end: int) -> tuple[int, int]:
    """Widen ``[start, end)`` to whole words."""
    while start > 0 and not context[start - 1].isspace():
        start -= 1
    while end < len(context) and not context[end].isspace():
        end += 1
    return start, end


def supporting_sentence(context: str, span: str, *, min_words: int = 3) -> str | None:
    """The sentence of ``context`` that contains ``span`` (matched ignoring case, punctuation and
    white space), word for word; ``None`` when ``span`` is not in ``context``.

    A sentence shorter than ``min_words`` words is extended with the next one (quotes that short
    cannot be verified); a very long one is cut to the words around the span.
    """
    loc = None
    # the oracle's own matching drops articles: try the span without its leading article, then
    # without any article
    bare = re.sub(r"^\s*(?:a|an|the)\s+", "", span, flags=re.IGNORECASE)
    for variant in dict.fromkeys((span, bare, match_key(span))):
        if variant.strip():
            loc = locate_quote(variant, context, min_words=1)
            if loc is not None:
                break
    if loc is None:
        return None
    s, e = loc
    lo = max(0, s - _WINDOW)
    start = lo
    for boundary in _SENTENCE_END.finditer(context, lo, s):
        start = boundary.end()
    if start == lo and lo > 0:
        start, _ = _snap(context, lo, lo)
    end = len(context)
    search_from = e
    while True:
        m = _SENTENCE_END.search(context, search_from, min(len(context), search_from + _WINDOW))
        end = m.start() + 1 if m is not None else min(len(context), search_from + _WINDOW)
        if len(context[start:end].split()) >= min_words or m is None:
            break
        search_from = m.end()
    if end - start > _MAX_QUOTE:
        start, end = _snap(context, max(start, s - _MAX_QUOTE // 3), min(end, e + _MAX_QUOTE // 3))
    quote = " ".join(context[start:end].split())
    return quote or None


#: Contexts at least this long (documents) are normalised into their own cache.
_LONG_CONTEXT = 16_384


def _quote_lines(quotes: list[str]) -> str:
    return "".join(f'\n{QUOTE_LABEL} "{q}"' for q in quotes)


class OracleReader:
    """A perfectly calibrated reader that never calls a model.

    It answers with a gold answer exactly when that answer appears (case-, punctuation- and
    article-insensitively, on word boundaries) in the context it is shown, and declines with the
    sentinel otherwise (always, for an item marked unanswerable). With Self-Route it measures the
    retrieval side alone: the answerable ratio and token ratio a model that never guesses and
    never misses would reach. Usage is counted by the local tokenizer and labelled as such
    (``source="tokenizer"``). Only for span-answer data (``qa_f1`` / ``exact_match`` metrics).

    In grounded mode (the prompt asks for quotes) it appends ``Quote: "<the context sentence
    that contains the gold span>"``; asked for a structured verdict it returns
    ``{"answerable": ..., "answer": ...}`` (with ``quotes`` when the schema has them).

    Args:
        counter: Token counter for the usage it reports.
        decline: What it writes when the gold answer is not in its context.
        latency: Optional :class:`LatencyModel`; the harness then reports simulated latency.
    """

    name = "oracle"
    model_name = "oracle"
    cacheable = False
    is_oracle = True
    supports_structured = True

    def __init__(
        self,
        *,
        counter: TokenCounter | None = None,
        decline: str = DEFAULT_SENTINEL,
        latency: LatencyModel | None = None,
    ) -> None:
        self.counter = counter or default_token_counter()
        self.decline = decline
        self.latency_model = latency
        self._norm_cache: OrderedDict[str, str] = OrderedDict()
        self._norm_long: OrderedDict[str, str] = OrderedDict()
        self._paragraphs: dict[str, str] = {}
        self._answers: dict[str, str] = {}
        self._paragraph_chars = 0

    def cache_identity(self) -> str:
        return "oracle"

    def _answer_key(self, answer: str) -> str:
        """`` {match_key(answer)} `` (empty when the key is), remembered for the last answers."""
        key = self._answers.get(answer)
        if key is None:
            bare = match_key(answer)
            key = f" {bare} " if bare else ""
            if len(self._answers) >= 4096:
                del self._answers[next(iter(self._answers))]
            self._answers[answer] = key
        return key

    def _paragraph_keys(self, text: str) -> str:
        """``match_key(text)``, from the keys of its paragraphs (split at blank lines; each one
        remembered, so passages met again in other contexts are not normalised again).

        Exact: every step of :func:`match_key` is local to a character or ends at white space
        (lower case -- a final sigma looks no further than white space --, NFKC -- a line break
        composes with nothing --, blanking, articles at word boundaries), so a blank line
        between two texts makes their keys join with one space."""
        if "\n\n" not in text:
            return match_key(text)
        keys = []
        for part in text.split("\n\n"):
            key = self._paragraphs.get(part)
            if key is None:
                key = match_key(part)
                self._paragraphs[part] = key
                self._paragraph_chars += len(part)
                while self._paragraph_chars > 2_000_000:
                    oldest = next(iter(self._paragraphs))
                    self._paragraph_chars -= len(oldest)
                    del self._paragraphs[oldest]
            if key:
                keys.append(key)
        return " ".join(keys)

    def _normalized(self, text: str) -> str:
        # documents have their own cache: hundreds of passages must not push them out
        cache = self._norm_cache if len(text) < _LONG_CONTEXT else self._norm_long
        hit = cache.get(text)
        if hit is None:
            hit = f" {self._paragraph_keys(text)} "
            cache[text] = hit
            if len(cache) > (512 if cache is self._norm_cache else 16):
                cache.popitem(last=False)  # least recently used first
        else:
            cache.move_to_end(text)
        return hit

    def golds_in(self, item: EvalItem, context: str) -> list[str]:
        """The gold answers of ``item`` that appear in ``context``, in order."""
        if item.metric not in ("qa_f1", "exact_match"):
            raise ConfigurationError(
                f"the oracle reader needs span answers (qa_f1/exact_match), but item {item.id!r} "
                f"uses {item.metric!r}"
            )
        if item.unanswerable:
            return []
        haystack = self._normalized(context)
        return [g for g in item.answers if (n := self._answer_key(g)) and n in haystack]

    def gold_in(self, item: EvalItem, context: str) -> str | None:
        """The first gold answer of ``item`` that appears in ``context``, else ``None``."""
        found = self.golds_in(item, context)
        return found[0] if found else None

    def answer_for(self, item: EvalItem, context: str) -> str:
        """The oracle's answer to ``item`` given ``context``."""
        gold = self.gold_in(item, context)
        return self.decline if gold is None else gold

    def respond(self, request: ModelRequest) -> tuple[str | None, list[str]]:
        """``(answer or None for a decline, quotes)`` for ``request``."""
        found = self.golds_in(request.item, request.context)
        if not found:
            return None, []
        if request.wants_quotes:
            for gold in found:  # the first gold answer whose sentence can be quoted
                sentence = supporting_sentence(request.context, gold)
                if sentence is not None:
                    return gold, [sentence]
        return found[0], []

    def render(self, request: ModelRequest, answer: str | None, quotes: list[str]) -> Generation:
        """The :class:`~selfroute.Generation` for an answer (``None``: decline) and its quotes."""
        structured: dict[str, Any] | None = None
        if request.structured is not None:
            structured = {"answerable": answer is not None, "answer": answer or ""}
            if request.wants_quotes:
                structured["quotes"] = list(quotes)
            text = json.dumps(structured, ensure_ascii=False)
        elif answer is None:
            text = self.decline
        else:
            text = answer + _quote_lines(quotes)
        usage = Usage.of(
            count_in_prompt(self.counter, request.prompt, request.context),
            self.counter.count(text),
            source=self.counter.source,
        )
        return Generation(text=text, usage=usage, model="oracle", structured=structured)

    async def agenerate(self, request: ModelRequest) -> Generation:
        answer, quotes = self.respond(request)
        return self.render(request, answer, quotes)


#: How :class:`FabricatingOracleReader` supports an invented answer in grounded mode.
FABRICATED_QUOTES = ("invented", "irrelevant")

_NAME_LIKE = re.compile(r"\b[A-Z][a-z]{3,}\b")


def _reads_as_answer(text: str) -> bool:
    """Whether the verdict parser reads ``text`` as an answer ("Please", "Sorry": not)."""
    return parse_verdict(text).answered


class FabricatingOracleReader(OracleReader):
    """Scripted hallucination: the oracle, except that in the long-context call on a question
    whose answer is not in the document it invents an answer (at ``rate``, deterministically per
    item and ``seed``).

    It measures the abstention trade-off without a model: how often LC, Self-Route and Self-Route
    in grounded mode still decline when the long-context model makes something up. In grounded
    mode the invented answer comes with a quote:

    * ``quote="invented"``: a sentence that is not in the document (grounded mode catches it);
    * ``quote="irrelevant"``: a real sentence of the document that does not support the answer
      (the quote check finds it, so grounded mode lets the invented answer through -- quote
      verification proves that a quote exists, not that it supports the answer).

    The invented answer is the question's plausible answer when the data has one (SQuAD 2.0's
    ``plausible_answers``), else a capitalised word of the document.

    Args:
        rate: Share of such calls that invent an answer (``1.0``: always).
        quote: ``invented`` or ``irrelevant``.
        seed: Seed of the per-item choices.
        counter: Token counter for the usage it reports.
        decline: What it writes when it declines.
        latency: Optional :class:`LatencyModel`.
    """

    def __init__(
        self,
        *,
        rate: float = 1.0,
        quote: str = "invented",
        seed: int = 0,
        counter: TokenCounter | None = None,
        decline: str = DEFAULT_SENTINEL,
        latency: LatencyModel | None = None,
    ) -> None:
        super().__init__(counter=counter, decline=decline, latency=latency)
        if isinstance(rate, bool) or not isinstance(rate, (int, float)) or not 0 <= rate <= 1:
            raise ConfigurationError(f"fabrication rate must be between 0 and 1, got {rate!r}")
        if quote not in FABRICATED_QUOTES:
            raise ConfigurationError(
                f"fabricated quote must be one of {list(FABRICATED_QUOTES)}, got {quote!r}"
            )
        self.rate = float(rate)
        self.quote = quote
        self.seed = seed
        self.name = f"fabricating-oracle(rate={self.rate:g}, quote={quote}, seed={seed})"
        self.fabricated = 0

    def cache_identity(self) -> str:
        return self.name

    def _rng(self, request: ModelRequest) -> random.Random:
        return random.Random(f"{self.seed}:{request.item.id}:{request.question}")

    def fabricates(self, request: ModelRequest) -> bool:
        """Whether this long-context call invents an answer (when the answer is absent)."""
        return request.stage is Stage.LONG_CONTEXT and self._rng(request).random() < self.rate

    def invented_answer(self, request: ModelRequest) -> str:
        """The answer it makes up for ``request``."""
        plausible = request.item.metadata.get("plausible_answers") or []
        for p in plausible:
            text = p.get("text") if isinstance(p, dict) else p
            if isinstance(text, str) and text.strip():
                return text.strip()
        rng = self._rng(request)
        rng.random()
        names = sorted(
            {n for n in _NAME_LIKE.findall(request.context[:50_000]) if _reads_as_answer(n)}
        )
        return rng.choice(names) if names else "Forty-two"

    def invented_quote(self, request: ModelRequest, answer: str) -> str:
        """A quote that is not in the document."""
        topic = " ".join(request.question.rstrip(" ?").split()[:12])
        quote = f"It is recorded beyond doubt that {answer} is the answer to: {topic}."
        if locate_quote(quote, request.context) is not None:  # pragma: no cover - improbable
            quote += " This was never disputed by anyone."
        return quote

    def irrelevant_quote(self, request: ModelRequest, answer: str) -> str | None:
        """A real sentence of the document that does not contain ``answer``."""
        key = f" {match_key(answer)} "
        sentences = [
            " ".join(piece.split())
            for piece in _SENTENCE_END.split(request.context)
            if len(piece.split()) >= 8
        ]
        usable = [s for s in sentences if key not in f" {match_key(s)} "]
        if not usable:
            return None
        rng = self._rng(request)
        rng.random()
        rng.random()
        return rng.choice(usable)

    def respond(self, request: ModelRequest) -> tuple[str | None, list[str]]:
        answer, quotes = super().respond(request)
        if answer is not None or not self.fabricates(request):
            return answer, quotes
        self.fabricated += 1
        invented = self.invented_answer(request)
        if not request.wants_quotes:
            return invented, []
        if self.quote == "invented":
            return invented, [self.invented_quote(request, invented)]
        real = self.irrelevant_quote(request, invented)
        return invented, [real] if real is not None else []


# Constructor arguments that change how a call is made, never what it answers.
_NON_SEMANTIC = frozenset(
    {
        "max_retries",
        "timeout",
        "request_timeout",
        "streaming",
        "stream_usage",
        "default_metadata",
        "openai_api_key",
        "google_api_key",
        "api_key",
        "http_client",
        "http_async_client",
        "callbacks",
        "verbose",
        "tags",
        "metadata",
    }
)


def _model_identity(model: Any) -> str:
    """A stable description of a LangChain chat model's answer-relevant settings."""
    try:
        raw = model._get_llm_string()
    except Exception:
        raw = None
    if isinstance(raw, str):
        head, sep, tail = raw.partition("---")
        try:
            data = json.loads(head)
        except ValueError:
            return raw
        kwargs = data.get("kwargs") if isinstance(data, dict) else None
        if isinstance(kwargs, dict):
            data["kwargs"] = {k: v for k, v in kwargs.items() if k not in _NON_SEMANTIC}
        return json.dumps(data, sort_keys=True, default=str) + sep + tail
    params = getattr(model, "_identifying_params", None) or {}
    return json.dumps(
        {"class": type(model).__qualname__, **dict(params)}, sort_keys=True, default=str
    )


class ChatModelReader:
    """Any LangChain chat model as a reader; usage is what the provider reports.

    Args:
        model: A LangChain ``BaseChatModel`` (``ChatOpenAI``, ``ChatGoogleGenerativeAI``, ...).
        name: Name for reports; defaults to the model name.
        identity: Cache identity; defaults to the model's class and answer-relevant settings
            (model name, endpoint, temperature, max tokens; not keys, timeouts or retries).
    """

    cacheable = True
    is_oracle = False

    def __init__(self, model: Any, *, name: str | None = None, identity: str | None = None) -> None:
        if not hasattr(model, "ainvoke"):
            raise ConfigurationError(
                f"ChatModelReader needs a LangChain chat model, got {type(model).__name__}"
            )
        self.model = model
        register_model_secrets(model)  # a key of any shape passed in code is masked too
        self.model_name = str(
            getattr(model, "model_name", None) or getattr(model, "model", None) or "model"
        )
        self.name = name or self.model_name
        self._identity = identity or _model_identity(model)
        self._structured_ok: bool | None = None

    @classmethod
    def from_spec(cls, spec: str, **options: Any) -> ChatModelReader:
        """Build from ``openai:NAME``, ``google:NAME`` or ``NAME`` with ``base_url=``.

        ``options`` are those of :func:`chat_model_from_spec` (``base_url``, ``api_key``,
        ``temperature``, ``max_tokens``, ``timeout``, ``max_retries``).
        """
        return cls(chat_model_from_spec(spec, **options))

    def cache_identity(self) -> str:
        return self._identity

    async def agenerate(self, request: ModelRequest) -> Generation:
        # Frameworks are reached only through the adapter, which owns LangChain's usage parsing.
        try:
            from langchain_core.messages import HumanMessage
        except ImportError as exc:  # pragma: no cover - depends on the environment
            raise MissingDependencyError("langchain-core", "langchain") from exc

        from langchain_selfroute._handlers import (
            message_model,
            message_text,
            message_usage,
            structured_generation,
            structured_model,
        )

        messages = [HumanMessage(content=request.prompt)]
        if request.structured is not None:  # the prompt is already the structured one
            runnable = structured_model(self.model, request.structured)
            if runnable is not None:
                output = await runnable.ainvoke(messages)
                return structured_generation(output, self.model_name)
        message = await self.model.ainvoke(messages)
        model = message_model(message) or self.model_name
        return Generation(text=message_text(message), usage=message_usage(message), model=model)

    @property
    def supports_structured(self) -> bool:
        """Whether the model gives structured output (LangChain ``with_structured_output``);
        probed once per reader (the runner asks on every RAG step)."""
        if self._structured_ok is None:
            from langchain_selfroute._handlers import structured_model

            probe = StructuredRequest(prompt="", schema=verdict_schema(), required=False)
            self._structured_ok = structured_model(self.model, probe) is not None
        return self._structured_ok


def chat_model_from_spec(
    spec: str,
    *,
    base_url: str | None = None,
    api_key: str | None = None,
    temperature: float = 0.0,
    max_tokens: int | None = None,
    timeout: float | None = 120.0,
    max_retries: int = 2,
) -> Any:
    """A LangChain chat model from a short spec.

    * ``openai:gpt-4o-mini`` -- ``ChatOpenAI`` (key from ``OPENAI_API_KEY`` unless ``api_key``).
    * ``google:gemini-2.5-flash`` -- ``ChatGoogleGenerativeAI`` (``GOOGLE_API_KEY``).
    * ``NAME`` with ``base_url`` -- ``ChatOpenAI`` against any OpenAI-compatible server (vLLM,
      llama.cpp, Ollama, a gateway); a key is optional there.
    * ``offline`` -- the built-in keyless extractive reader (toy quality; see
      :class:`~selfroute.ExtractiveReader`).

    Raises:
        ConfigurationError: Malformed spec or unknown provider.
        MissingDependencyError: The provider's LangChain package is not installed.
    """
    if not isinstance(spec, str) or not spec.strip():
        raise ConfigurationError("model spec must be a non-empty string like 'openai:gpt-4o-mini'")
    if spec.strip().lower() in ("offline", "offline:extractive"):
        from langchain_selfroute._extractive import ExtractiveChatModel

        return ExtractiveChatModel()
    provider, sep, name = spec.strip().partition(":")
    if not sep:
        if base_url is None:
            raise ConfigurationError(
                f"model spec {spec!r} has no provider; write openai:NAME or google:NAME, or give "
                "a base URL for an OpenAI-compatible server"
            )
        provider, name = "openai", spec.strip()
    provider = provider.lower()
    if not name:
        raise ConfigurationError(f"model spec {spec!r} names no model")
    common: dict[str, Any] = {"temperature": temperature, "max_retries": max_retries}
    if timeout is not None:
        common["timeout"] = timeout
    if max_tokens is not None:
        common["max_tokens"] = max_tokens
    if provider == "openai":
        try:
            from langchain_openai import ChatOpenAI
        except ImportError as exc:
            raise MissingDependencyError("langchain-openai", "openai") from exc
        key = api_key or os.environ.get("OPENAI_API_KEY")
        if key is None and base_url is not None:
            key = "not-needed"  # local OpenAI-compatible servers usually ignore the key
        if key is None:
            raise ConfigurationError(
                f"{spec!r} needs an OpenAI API key: set OPENAI_API_KEY (or use --reader oracle "
                "for a keyless run)"
            )
        params: dict[str, Any] = {"model": name, **common}
        if key is not None:
            params["api_key"] = key
        if base_url is not None:
            params["base_url"] = base_url
        return ChatOpenAI(**params)
    if provider in ("google", "gemini", "google_genai"):
        try:
            from langchain_google_genai import ChatGoogleGenerativeAI
        except ImportError as exc:
            raise MissingDependencyError("langchain-google-genai", "google") from exc
        gparams: dict[str, Any] = {"model": name, **common}
        key = api_key or os.environ.get("GOOGLE_API_KEY") or os.environ.get("GEMINI_API_KEY")
        if key is None and base_url is None:
            raise ConfigurationError(
                f"{spec!r} needs a Google API key: set GOOGLE_API_KEY (or use --reader oracle "
                "for a keyless run)"
            )
        gparams["google_api_key"] = key or "not-needed"
        if base_url is not None:
            gparams["base_url"] = base_url
        return ChatGoogleGenerativeAI(**gparams)
    raise ConfigurationError(
        f"unknown provider {provider!r} in {spec!r}; use openai:NAME, google:NAME, or NAME with "
        "a base URL"
    )
