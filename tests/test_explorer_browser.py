"""The explorer notebook in a real JupyterLab, driven in headless Chromium as a person would use it.

JupyterLab runs on loopback with its home, settings and runtime folders in a temporary directory; Chromium
is Debian's (``/usr/bin/chromium``, installed by ``make browser``), driven by Playwright, which never downloads
a browser here. A screenshot of the explorer is saved under ``test-output/``.
"""

from __future__ import annotations

import json
import os
import re
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from apibank_lib import ApiCallSample, Benchmark
from apibank_lib.core.calls import format_call

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOK = ROOT / "notebooks" / "explorer.ipynb"
SCREENSHOT = ROOT / "test-output" / "explorer.png"
CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
SERVER_START_S = 45
"""JupyterLab answers within a few seconds here; a loaded 2-core machine may need more."""
CELLS_DONE_MS = 60_000
"""Starting the kernel, making two small reference runs and rendering the widget."""
STEP_MS = 15_000
"""Each other wait in the page (a menu opening, the view changing)."""

pytestmark = pytest.mark.slow


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _lab_env(tmp: Path) -> dict[str, str]:
    """The environment of the server and its kernels: every folder Jupyter or we write to lies in ``tmp``."""
    dirs = {
        "HOME": "home",
        "JUPYTER_CONFIG_DIR": "jupyter/config",
        "JUPYTER_DATA_DIR": "jupyter/data",
        "JUPYTER_RUNTIME_DIR": "jupyter/runtime",
        "IPYTHONDIR": "ipython",
        "APIBANK_RUNS": "runs",
    }
    env = dict(os.environ)
    for name, sub in dirs.items():
        (tmp / sub).mkdir(parents=True, exist_ok=True)
        env[name] = str(tmp / sub)
    env.pop("JUPYTER_PATH", None)
    # A user setting, in the temporary config folder: no news toast over the page, no request for news or updates.
    notification = Path(env["JUPYTER_CONFIG_DIR"], "lab/user-settings/@jupyterlab/apputils-extension")
    notification.mkdir(parents=True)
    notification.joinpath("notification.jupyterlab-settings").write_text(
        json.dumps({"fetchNews": "false", "checkForUpdates": False})
    )
    return env


def _python_kernel_is_ours(env: dict[str, str]) -> None:
    """Make the ``python3`` kernel this virtual environment's Python, whatever kernelspec Jupyter finds first.

    The venv's own spec says ``python``, which jupyter_client replaces by the server's interpreter (ours); a spec
    found elsewhere (a user's) could name another Python, so one naming ours goes in the temporary data folder,
    which Jupyter searches first.
    """
    spec = Path(env["JUPYTER_DATA_DIR"]) / "kernels" / "python3" / "kernel.json"
    spec.parent.mkdir(parents=True, exist_ok=True)
    argv = [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"]
    spec.write_text(json.dumps({"argv": argv, "display_name": "Python 3 (ipykernel)", "language": "python"}))


def _wait_until_up(url: str, server: subprocess.Popen[bytes], log: Path) -> None:
    deadline = time.monotonic() + SERVER_START_S
    while time.monotonic() < deadline:
        if server.poll() is not None:
            pytest.fail(f"JupyterLab exited with {server.returncode}:\n{log.read_text(errors='replace')[-3000:]}")
        try:
            with urllib.request.urlopen(url, timeout=2) as response:
                if response.status == 200:
                    return
        except (urllib.error.URLError, OSError):
            time.sleep(0.3)
    pytest.fail(f"JupyterLab did not answer within {SERVER_START_S} s:\n{log.read_text(errors='replace')[-3000:]}")


def _stop(server: subprocess.Popen[bytes], base: str, token: str) -> None:
    """Ask the server to shut down (it stops its kernels), then end what is left of its process group."""
    request = urllib.request.Request(f"{base}/api/shutdown?token={token}", method="POST")
    try:
        urllib.request.urlopen(request, timeout=5).close()
        server.wait(timeout=15)
    except (urllib.error.URLError, OSError, subprocess.TimeoutExpired):
        pass
    try:
        os.killpg(server.pid, signal.SIGKILL)  # the group holds only the server we started and its kernels
    except ProcessLookupError:
        pass
    server.wait(timeout=5)


@contextmanager
def jupyter_lab(root: Path, tmp: Path) -> Iterator[tuple[str, str]]:
    """A JupyterLab server on loopback serving ``root``; yields its base URL and token."""
    env = _lab_env(tmp)
    _python_kernel_is_ours(env)
    port, token = _free_port(), secrets.token_hex(16)
    base = f"http://127.0.0.1:{port}"
    log = tmp / "jupyterlab.log"
    args = [
        str(Path(sys.executable).parent / "jupyter"),
        "lab",
        "--no-browser",
        "--ServerApp.ip=127.0.0.1",
        f"--ServerApp.port={port}",
        "--ServerApp.port_retries=0",
        f"--IdentityProvider.token={token}",
        f"--ServerApp.root_dir={root}",
        "--ServerApp.open_browser=False",
        # nothing leaves the machine: no news feed, no update check, no extension listing from PyPI
        "--LabApp.news_url=None",
        "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
        "--LabApp.extension_manager=readonly",
        *(["--allow-root"] if os.geteuid() == 0 else []),  # CI runs as root
    ]
    with log.open("wb") as out:
        server = subprocess.Popen(args, env=env, cwd=root, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        _wait_until_up(f"{base}/api/status?token={token}", server, log)
        yield base, token
    finally:
        _stop(server, base, token)


def _gold_call(bench: Benchmark, dialogue_id: str) -> str:
    sample = next(s for s in bench.samples(1, "api") if s.dialogue_id == dialogue_id)
    assert isinstance(sample, ApiCallSample)
    return format_call(sample.gold.call)


def _open_and_run_all(page: Any, url: str) -> None:
    """Open the notebook, wait for its kernel, and run every cell from the Run menu, as a person would."""
    page.goto(url, timeout=CELLS_DONE_MS)
    page.locator(".jp-Notebook").wait_for()
    page.locator("#jp-main-statusbar").get_by_text("Idle", exact=False).wait_for(timeout=CELLS_DONE_MS)
    page.locator(".lm-MenuBar-itemLabel", has_text=re.compile(r"^Run$")).click()
    page.locator(".lm-Menu-itemLabel", has_text=re.compile(r"^Run All Cells$")).click()


def test_the_explorer_renders_and_reacts_in_jupyterlab(bench: Benchmark, tmp_path: Path) -> None:
    if not CHROMIUM.is_file():
        pytest.skip(f"no Chromium at {CHROMIUM}: run `make browser` (as root it installs Debian's chromium)")
    sync_api = pytest.importorskip("playwright.sync_api", reason="Playwright is not installed (pip install playwright)")
    root = tmp_path / "notebooks"
    root.mkdir()
    shutil.copy(NOTEBOOK, root / "explorer.ipynb")
    first, second = (d.id for d in bench.dialogues(1)[:2])
    with jupyter_lab(root, tmp_path) as (base, token), sync_api.sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS, headless=True)
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 1400})
            page.set_default_timeout(STEP_MS)
            _open_and_run_all(page, f"{base}/lab/tree/explorer.ipynb?token={token}")
            output = page.locator(".jp-OutputArea-output")
            view = output.locator(".widget-html-content").first
            view.get_by_text(_gold_call(bench, first)).first.wait_for(timeout=CELLS_DONE_MS)
            before = view.inner_text()
            label = page.locator("label", has_text=re.compile("^dialogue$"))
            output.locator(".widget-dropdown").filter(has=label).locator("select").select_option(second)
            view.get_by_text(_gold_call(bench, second)).first.wait_for()
            title = view.inner_text().splitlines()[0]
            assert view.inner_text() != before and second in title and first not in title
            # nothing went to stderr (JupyterLab shows errors with that type too): no error, no warning
            assert not page.locator(".jp-OutputArea-output[data-mime-type='application/vnd.jupyter.stderr']").count()
            output.first.evaluate("area => area.scrollIntoView({block: 'start'})")  # the controls at the top
            SCREENSHOT.parent.mkdir(exist_ok=True)
            page.screenshot(path=str(SCREENSHOT))
            print(f"screenshot: {SCREENSHOT}")
        finally:
            browser.close()
