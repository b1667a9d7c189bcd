"""The tracetool daemon: watcher, live index, JSON-RPC, LSP and MCP servers."""
