"""Download progress on a pipe: a line every few seconds while it runs, then one when done."""

from __future__ import annotations

import io

from wgtpm.cli._render import PIPE_PERIOD, LineReporter


class _Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_a_long_download_prints_progress_every_period_in_mib() -> None:
    out, clock = io.StringIO(), _Clock()
    r = LineReporter(out, clock=clock)
    mib = 1 << 20
    r.start("github.com/acme/big@v0.1.0", 200 * mib)
    for _ in range(12):  # 12 chunks, one second apart
        clock.now += 1
        r.advance("github.com/acme/big@v0.1.0", 16 * mib)
    r.advance("github.com/acme/big@v0.1.0", 8 * mib)
    r.finish("github.com/acme/big@v0.1.0")
    lines = out.getvalue().splitlines()
    assert lines == [
        "wgtpm: downloading github.com/acme/big@v0.1.0: 80.0 MiB of 200.0 MiB (40%)",
        "wgtpm: downloading github.com/acme/big@v0.1.0: 160.0 MiB of 200.0 MiB (80%)",
        "wgtpm: downloaded github.com/acme/big@v0.1.0 (200.0 MiB)",
    ]
    assert PIPE_PERIOD == 5.0


def test_a_short_download_prints_only_its_line_and_quiet_prints_nothing() -> None:
    out, clock = io.StringIO(), _Clock()
    r = LineReporter(out, clock=clock)
    r.start("m@v1.0.0", 1000)
    clock.now += 1
    r.advance("m@v1.0.0", 1000)
    r.finish("m@v1.0.0")
    assert out.getvalue() == "wgtpm: downloaded m@v1.0.0 (1000 B)\n"
    quiet = io.StringIO()
    q = LineReporter(quiet, progress=False, clock=clock)
    q.start("m@v1.0.0", 1000)
    clock.now += 60
    q.advance("m@v1.0.0", 1000)
    q.finish("m@v1.0.0")
    assert quiet.getvalue() == ""
