"""VS Code for real: code-server (from scripts/install-vscode-parts) with the extension packaged by
@vscode/vsce, opened on a project in headless Chromium through chromedriver.

`parts()` says where code-server and vsce are, or why they are not there. `VSCodeSession`
packages editors/vscode (npm install of its dependency from the npm cache, `vsce package`),
installs the .vsix into a private extensions folder, writes user settings that point the
extension at this interpreter's `tracetool` and `tracetool-lsp`, starts code-server on a free
127.0.0.1 port without auth and opens the project in a browser. `close()` stops the browser,
code-server (its process group) and the daemon the extension started (by its discovery file).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

from tests.editor.webdriver import Browser, free_port

ROOT = Path(__file__).resolve().parents[2]
EXTENSION = ROOT / "editors" / "vscode"


def parts_dir() -> Path:
    return Path(
        os.environ.get("TRACETOOL_VSCODE_PARTS") or Path.home() / ".cache" / "tracetool-vscode"
    )


def parts() -> tuple[Path, Path] | str:
    """(code-server, vsce), or the reason they cannot be used."""
    bin_dir = parts_dir() / "node_modules" / ".bin"
    code_server, vsce = bin_dir / "code-server", bin_dir / "vsce"
    if not code_server.exists() or not vsce.exists():
        return (
            f"code-server and @vscode/vsce are not installed in {parts_dir()} "
            "(run scripts/install-vscode-parts; CI does not install them)"
        )
    if shutil.which("chromedriver") is None or shutil.which("chromium") is None:
        return "chromium and chromedriver are needed to drive code-server"
    return code_server, vsce


class VSCodeSession:
    def __init__(self, tmp: Path, project: Path, home: Path, size: tuple[int, int] = (1500, 950)):
        found = parts()
        if isinstance(found, str):
            raise RuntimeError(found)
        self.code_server, self.vsce = found
        self.tmp, self.project, self.home = tmp, project, home
        self.env = {k: v for k, v in os.environ.items() if not k.startswith("TRACETOOL")}
        self.env.update(HOME=str(home), TRACETOOL_INDEX_WORKERS="1")
        self.vsix = self.package()
        common = ["--extensions-dir", str(tmp / "exts"), "--user-data-dir", str(tmp / "data")]
        self.run(str(self.code_server), *common, "--install-extension", str(self.vsix), "--force")
        self.write_settings()
        self.port = free_port()
        self.log = open(tmp / "code-server.log", "wb")
        self.proc = subprocess.Popen(
            [
                str(self.code_server),
                *common,
                "--auth", "none",
                "--bind-addr", f"127.0.0.1:{self.port}",
                "--disable-telemetry",
                "--disable-update-check",
                "--disable-workspace-trust",
                "--ignore-last-opened",
                str(project),
            ],
            env=self.env,
            stdout=self.log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )  # fmt: skip
        self.browser: Browser | None = None
        try:
            self.wait_http()
            self.browser = Browser.start(tmp, size)
            self.browser.get(f"http://127.0.0.1:{self.port}/?folder={project}")
            self.browser.find(".monaco-workbench", 90)
        except BaseException:
            self.close()
            raise

    def run(self, *args: str, cwd: Path | None = None) -> None:
        done = subprocess.run(
            args, cwd=cwd, env=self.env, capture_output=True, text=True, timeout=300
        )
        assert done.returncode == 0, f"{args[0]}: {done.stdout[-1500:]}{done.stderr[-1500:]}"

    def package(self) -> Path:
        """The extension as a .vsix, made by @vscode/vsce (with vscode-languageclient inside)."""
        ext = self.tmp / "extension"
        shutil.copytree(EXTENSION, ext, ignore=shutil.ignore_patterns("node_modules", "*.vsix"))
        # vscode-languageclient comes from npm's cache (scripts/install-vscode-parts put it there)
        npm = ["npm", "install", "--prefer-offline", "--omit=dev", "--ignore-scripts"]
        self.run(*npm, "--no-audit", "--no-fund", "--loglevel=error", cwd=ext)
        vsix = self.tmp / "tracetool.vsix"
        self.run(
            str(self.vsce), "package", "--allow-missing-repository", "--skip-license",
            "-o", str(vsix), cwd=ext,
        )  # fmt: skip
        return vsix

    def write_settings(self) -> None:
        user = self.tmp / "data" / "User"
        user.mkdir(parents=True, exist_ok=True)
        venv = Path(sys.executable).parent
        settings = {
            "tracetool.cliPath": str(venv / "tracetool"),
            "tracetool.serverPath": str(venv / "tracetool-lsp"),
            "tracetool.pollInterval": 1,
            "workbench.startupEditor": "none",
            "workbench.tips.enabled": False,
            "security.workspace.trust.enabled": False,
            "telemetry.telemetryLevel": "off",
            "extensions.ignoreRecommendations": True,
            "workbench.colorTheme": "Default Light Modern",
        }
        (user / "settings.json").write_text(json.dumps(settings, indent=2))

    def wait_http(self, timeout: float = 90.0) -> None:
        deadline = time.monotonic() + timeout
        opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
        while True:
            try:
                with opener.open(f"http://127.0.0.1:{self.port}/healthz", timeout=5):
                    return
            except OSError:
                if self.proc.poll() is not None or time.monotonic() > deadline:
                    log = (self.tmp / "code-server.log").read_text(errors="replace")
                    raise AssertionError(f"code-server did not start: {log[-2000:]}") from None
                time.sleep(0.2)

    # -- the workbench ---------------------------------------------------------------------------

    def open_recordings_view(self) -> None:
        assert self.browser is not None
        item = self.browser.find('.activitybar .action-item a[aria-label="tracetool"]', 90)
        self.browser.click(item)

    def tree_rows(self) -> list[str]:
        assert self.browser is not None
        rows: list[str] = self.browser.run(
            "return [...document.querySelectorAll('.pane-body .monaco-list-row')]"
            ".map(r => r.getAttribute('aria-label') || '')"
        )
        return rows

    def click_tree_row(self, starts: str, opens: str | None = None) -> None:
        """Click the tree row whose text starts with `starts`; with `opens`, until an editor
        tab of that title is there (a loaded machine may drop a click while the tree redraws)."""
        b = self.browser
        assert b is not None

        def row() -> str:
            found = b.wait(
                lambda: [
                    r
                    for r in b.find_all(".pane-body .monaco-list-row")
                    if b.text(r).startswith(starts)
                ],
                120,
                f"a tree row starting {starts!r}",
            )
            return str(found[0])

        def opened() -> bool:
            titles: list[str] = b.run(
                "return [...document.querySelectorAll('.tab')].map(t => t.innerText)"
            )
            return any(opens in t for t in titles) if opens else True

        for _ in range(4):
            b.click(row())
            try:
                b.wait(opened, 30, f"an editor tab {opens!r}")
                return
            except AssertionError:
                continue
        raise AssertionError(f"clicking {starts!r} never opened {opens!r}")

    def enter_webview(self) -> None:
        b = self.browser
        assert b is not None
        b.top()
        b.frame(b.find("iframe.webview", 120))
        b.frame(b.find("iframe#active-frame", 120))

    def close(self) -> None:
        if self.browser is not None:
            self.browser.quit()
            self.browser = None
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(timeout=5)
        self.log.close()
        # the daemon the extension started (its own process, announced in its discovery file)
        for found in (self.home / ".trace" / "data").glob("*/daemon.json"):
            try:
                pid = int(json.loads(found.read_text())["pid"])
                os.kill(pid, signal.SIGTERM)
            except (OSError, ValueError, KeyError):
                pass
