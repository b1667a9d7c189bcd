"""Drive a command through a real terminal (tmux): answer its prompts as a user would."""

from __future__ import annotations

import shlex
import shutil
import subprocess
import time
import uuid
from pathlib import Path

from tests.realparts import need


def run_in_terminal(
    cmd: list[str], cwd: Path, env: dict[str, str], answers: dict[str, str], timeout: float = 300
) -> tuple[int, str]:
    """Run `cmd` in a tmux pane; whenever the screen's last line ends with a prompt in `answers`,
    type the answer. Returns (exit code, the whole screen history)."""
    if shutil.which("tmux") is None:
        need("tmux", "tests/install drive `tracetool install` through a terminal")
    socket = f"tt-{uuid.uuid4().hex[:8]}"
    exports = " ".join(f"{k}={shlex.quote(v)}" for k, v in env.items())
    script = (
        f"cd {shlex.quote(str(cwd))} && env {exports} {shlex.join(cmd)}; "
        "echo __EXIT=$?__; sleep 600"
    )
    tmux = ["tmux", "-L", socket]
    subprocess.run([*tmux, "new-session", "-d", "-x", "200", "-y", "50", script], check=True)
    answered: set[int] = set()
    screen = ""
    try:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            screen = subprocess.run(
                [*tmux, "capture-pane", "-p", "-J", "-S", "-2000"],
                capture_output=True,
                text=True,
                check=False,
            ).stdout
            if "__EXIT=" in screen:
                code = int(screen.split("__EXIT=", 1)[1].split("__", 1)[0])
                return code, screen
            lines = [line for line in screen.rstrip().splitlines() if line.strip()]
            last = lines[-1] if lines else ""
            for prompt, answer in answers.items():
                if prompt in last and len(lines) not in answered:
                    answered.add(len(lines))
                    subprocess.run([*tmux, "send-keys", answer, "Enter"], check=True)
                    break
            time.sleep(0.3)
        raise AssertionError(f"{shlex.join(cmd)} did not finish in {timeout}s:\n{screen}")
    finally:
        subprocess.run([*tmux, "kill-server"], capture_output=True, check=False)
