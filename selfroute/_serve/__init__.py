"""``selfroute mcp`` and ``selfroute serve``: Self-Route as MCP tools and as an OpenAI-compatible
model (private; the commands are the interface).

* :mod:`._clients` -- async twins of ``ask``'s model clients;
* :mod:`._service` -- one collection answered with the core's async driver;
* :mod:`._payload` -- the summary of an answer (the MCP output schema, the ``selfroute`` field);
* :mod:`._mcp` -- the MCP tools;
* :mod:`._commands` -- the two commands.
"""
