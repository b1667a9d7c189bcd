// The daemon of each project (one per trace_dir): found or started with `tracetool rpc -d DIR`,
// called with JSON-RPC over HTTP on 127.0.0.1. A second `tracetool rpc` for the same
// recordings directory exits with status 3 naming the running one's port; that one is used.
// The language server finds the same daemon through its discovery file, so the tree, the
// viewer, the lenses and the CLI all read one index.

"use strict";

const cp = require("child_process");
const http = require("http");

const PORT_IN_MESSAGE = /127\.0\.0\.1:(\d+)/;

class Daemon {
  constructor(directory, command, log) {
    this.directory = directory;
    this.command = command; // e.g. "tracetool" or "/path/.venv/bin/tracetool"
    this.log = log || (() => {});
    this.port = null;
    this.proc = null;
    this.starting = null;
    this.nextId = 1;
  }

  start() {
    if (this.port) return Promise.resolve(this.port);
    if (this.starting) return this.starting;
    this.starting = new Promise((resolve, reject) => {
      const proc = cp.spawn(this.command, ["rpc", "-d", this.directory], {
        cwd: this.directory,
        stdio: ["ignore", "pipe", "pipe"],
      });
      let out = "";
      let err = "";
      let done = false;
      const finish = (fn, value) => {
        if (!done) {
          done = true;
          this.starting = null;
          fn(value);
        }
      };
      proc.on("error", (e) => finish(reject, new Error(`cannot run ${this.command}: ${e.message}`)));
      proc.stdout.on("data", (chunk) => {
        out += chunk.toString();
        const line = out.split("\n")[0];
        if (out.includes("\n") && !done) {
          try {
            this.port = JSON.parse(line).port;
            this.proc = proc;
            // an extension host that exits without deactivating still takes its daemon along
            process.once("exit", () => proc.kill("SIGTERM"));
            this.log(`tracetool daemon for ${this.directory} on port ${this.port} (pid ${proc.pid})`);
            finish(resolve, this.port);
          } catch (e) {
            finish(reject, new Error(`unexpected first line from tracetool rpc: ${line}`));
          }
        }
      });
      proc.stderr.on("data", (chunk) => {
        err += chunk.toString();
        this.log(chunk.toString().trimEnd());
      });
      proc.on("exit", (code) => {
        if (this.proc === proc) {
          this.proc = null;
          this.port = null;
        }
        const found = PORT_IN_MESSAGE.exec(err);
        if (code === 3 && found) {
          this.port = Number(found[1]);
          this.log(`using the tracetool daemon already serving ${this.directory} (port ${this.port})`);
          finish(resolve, this.port);
        } else {
          const last = err.trim().split("\n").pop() || `exit status ${code}`;
          finish(reject, new Error(`tracetool rpc -d ${this.directory}: ${last}`));
        }
      });
    });
    return this.starting;
  }

  async call(method, params) {
    const port = await this.start();
    const body = JSON.stringify({ jsonrpc: "2.0", id: this.nextId++, method, params: params || {} });
    let answer;
    try {
      answer = await post(port, body);
    } catch (e) {
      this.port = null; // gone: start (or find) it again next time
      throw e;
    }
    if (answer.error) {
      const error = new Error(answer.error.message);
      error.code = answer.error.code;
      throw error;
    }
    return answer.result;
  }

  stop() {
    if (this.proc) {
      this.proc.kill("SIGTERM");
      this.proc = null;
    }
    this.port = null;
  }
}

function post(port, body) {
  return new Promise((resolve, reject) => {
    const req = http.request(
      {
        host: "127.0.0.1",
        port,
        path: "/",
        method: "POST",
        headers: { "Content-Type": "application/json", "Content-Length": Buffer.byteLength(body) },
      },
      (res) => {
        const chunks = [];
        res.on("data", (c) => chunks.push(c));
        res.on("end", () => {
          try {
            resolve(JSON.parse(Buffer.concat(chunks).toString() || "null"));
          } catch (e) {
            reject(new Error(`daemon answered HTTP ${res.statusCode}`));
          }
        });
      }
    );
    req.on("error", reject);
    req.end(body);
  });
}

module.exports = { Daemon };
