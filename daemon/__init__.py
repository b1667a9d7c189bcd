"""The tracetool daemon (import name `tracetool_daemon`): watcher, live index, JSON-RPC server.

One daemon per recordings directory (`tracetool rpc`, `tracetool index --watch [--port N]`):

- `runner.Daemon` claims each directory (`discovery`: an OS lock plus the discovery file
  `~/.trace/data/<sha>/daemon.json`), starts a warm indexing process pool, one `LiveIndex` per
  directory and, with a port, the HTTP server; SIGINT/SIGTERM end it cleanly.
- `liveindex.LiveIndex` keeps query.db current: a full `tracetool.index.index_directory` pass at
  start, then `tracetool.index.index_paths` for each settled batch from `watcher.Watcher`
  (watchdog, inotify/FSEvents; no rescans) or from `index.files`.
- `server.RpcHttpServer` serves JSON-RPC 2.0 on 127.0.0.1 (Host/Origin checks, body limit) and
  hands each body to `registry.dispatch`, which runs the methods in `methods/` with a
  `service.Service` as context; `rpc-client` uses the same dispatcher in-process.
- `retrieval.IndexRetriever` gives the assistant (`tracetool.assistant`) its runtime context.

The methods and their payloads are documented in docs/rpc.md.
"""
