"""Usual SelfRoute calls, type-checked with ``mypy --strict`` by tests/unit/test_typing.py.

Not run: it only has to type-check (the calls are those of the docs and of LangChain users).
"""

from __future__ import annotations

from operator import itemgetter
from typing import Any

from langchain_core.messages import HumanMessage
from langchain_core.output_parsers import StrOutputParser
from langchain_core.prompt_values import ChatPromptValue
from langchain_core.runnables import Runnable, RunnablePassthrough
from langchain_core.tools import BaseTool

from langchain_selfroute import SelfRoute, SelfRouteChunk, SelfRouteOutput
from selfroute import Route


async def usual_calls(route: SelfRoute) -> None:
    out: SelfRouteOutput = route.invoke("q")
    answer: str | None = out.answer
    ratio: float | None = out.token_ratio
    taken: Route = out.route
    print(answer, ratio, taken.value, out["answer"], out.get("cost"))

    outs: list[SelfRouteOutput] = await route.abatch(["q1", "q2"])
    questions = ["q1", "q2"]  # a list[str], not a list of the input union
    await route.abatch(questions)
    route.batch(questions, {"max_concurrency": 2})
    sync_outs: list[SelfRouteOutput] = route.batch(["q1", {"question": "q2"}])
    await route.ainvoke({"question": "q", "document": "a long text"})
    route.invoke({"input": "q", "chat_history": []})
    route.invoke([HumanMessage("q")])
    route.invoke(ChatPromptValue(messages=[HumanMessage("q")]))

    for chunk in route.stream("q"):
        delta: str = chunk.text
        print(delta, chunk["answer"], chunk.route)
    async for achunk in route.astream("q"):
        typed: SelfRouteChunk = achunk
        print(typed.retracted)

    text_chain: Runnable[Any, str] = route.answer_only() | StrOutputParser()
    picked: Runnable[Any, Any] = route.pick("answer")
    getter: Runnable[Any, Any] = route | itemgetter("answer")
    assigned: Runnable[Any, Any] = RunnablePassthrough.assign(result=route)
    tool: BaseTool = route.as_tool(name="manual", description="Answers about the manual.")
    print(outs, sync_outs, text_chain, picked, getter, assigned, tool)
