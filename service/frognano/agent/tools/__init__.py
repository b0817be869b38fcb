"""The agent's five tools: their schema, the toolbox that dispatches them, and each tool."""
