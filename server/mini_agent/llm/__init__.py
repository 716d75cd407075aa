"""Model adapters: text ReAct, the OpenAI-compatible client and stop-word streaming."""
