"""How the ``wgtpm`` program ends (:func:`wgtpm.cli.entry`): without the interpreter's
teardown, but with everything of it that matters: the exit status, what was printed,
the ``atexit`` functions, and threads that are not daemons."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path


def _python(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, *args], capture_output=True, text=True, cwd=cwd, timeout=120
    )


def _entry(code: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return _python("-c", code, cwd=cwd)


def test_help_is_printed_whole_through_a_pipe(tmp_path: Path) -> None:
    done = _python("-m", "wgtpm", "--help", cwd=tmp_path)
    assert done.returncode == 0
    assert done.stdout.startswith("usage: wgtpm")
    assert done.stdout.rstrip().splitlines()[-1].strip()  # the last line came too


def test_a_usage_error_keeps_its_status(tmp_path: Path) -> None:
    done = _python("-m", "wgtpm", "get", "--no-such-flag", cwd=tmp_path)
    assert done.returncode == 2
    assert "--no-such-flag" in done.stderr


def test_an_error_keeps_its_status_and_its_line(tmp_path: Path) -> None:
    done = _python("-m", "wgtpm", "list", "-m", cwd=tmp_path)
    assert done.returncode == 1
    assert done.stderr.startswith("wgtpm: ") and "wgt.mod" in done.stderr


def test_atexit_functions_and_threads_are_done_before_the_end(tmp_path: Path) -> None:
    code = (
        "import atexit, sys, threading, time\n"
        "from wgtpm import cli\n"
        "out = open('late.txt', 'w')\n"
        "def late():\n"
        "    time.sleep(0.3)\n"
        "    out.write('thread\\n')\n"
        "    out.flush()\n"
        "atexit.register(lambda: print('atexit ran', flush=False))\n"
        "threading.Thread(target=late).start()\n"
        "print('buffered, not flushed', end='')\n"
        "sys.argv = ['wgtpm', '--version']\n"
        "cli.entry()\n"
        "print('never')\n"
    )
    done = _entry(code, tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("buffered, not flushed")
    assert "atexit ran" in done.stdout and "never" not in done.stdout
    assert (tmp_path / "late.txt").read_text() == "thread\n"


def test_a_status_above_255_is_what_sys_exit_gives(tmp_path: Path) -> None:
    code = "import sys\nfrom wgtpm import cli\ncli.main = lambda: sys.exit(256 + 3)\ncli.entry()\n"
    assert _entry(code, tmp_path).returncode == 3
    code = "import sys\nfrom wgtpm import cli\ncli.main = lambda: sys.exit('why')\ncli.entry()\n"
    done = _entry(code, tmp_path)
    assert (done.returncode, done.stderr) == (1, "why\n")


def test_ctrl_c_while_threads_finish_is_one_line(tmp_path: Path) -> None:
    code = (
        "import os, signal, sys, threading, time\n"
        # Ctrl-C as a terminal gives it, even where this test runs as a background job of a
        # script (which starts with SIGINT ignored, and Python then keeps it ignored)
        "signal.signal(signal.SIGINT, signal.default_int_handler)\n"
        "from wgtpm import cli\n"
        "def late():\n"
        "    time.sleep(0.2)\n"
        "    os.kill(os.getpid(), signal.SIGINT)\n"
        "    time.sleep(30)\n"
        "threading.Thread(target=late).start()\n"
        "sys.argv = ['wgtpm', '--version']\n"
        "cli.entry()\n"
    )
    done = _entry(code, tmp_path)
    assert (done.returncode, done.stderr) == (130, "wgtpm: interrupted\n")
