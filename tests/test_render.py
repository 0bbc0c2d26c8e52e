"""What the CLI's one reporter prints: download and training progress, on a pipe and a terminal.

- a download on a pipe: a line every few seconds while it runs, then one when done;
- training on a pipe: the first step, a line every few seconds, the last step;
  on a terminal one line rewritten in place;
- ``-q``: no progress of either kind, notices and warnings all the same;
- an upload (a publish's file) is worded as one, on a pipe and a terminal.
"""

from __future__ import annotations

import io

from wgtpm._report import begin
from wgtpm.cli._render import PIPE_PERIOD, StderrReporter


class _Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_a_long_download_prints_progress_every_period_in_mib() -> None:
    out, clock = io.StringIO(), _Clock()
    r = StderrReporter(out, clock=clock)
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
    r = StderrReporter(out, clock=clock)
    r.start("m@v1.0.0", 1000)
    clock.now += 1
    r.advance("m@v1.0.0", 1000)
    r.finish("m@v1.0.0")
    assert out.getvalue() == "wgtpm: downloaded m@v1.0.0 (1000 B)\n"
    quiet = io.StringIO()
    q = StderrReporter(quiet, progress=False, clock=clock)
    q.start("m@v1.0.0", 1000)
    clock.now += 60
    q.advance("m@v1.0.0", 1000)
    q.finish("m@v1.0.0")
    assert quiet.getvalue() == ""


def test_training_on_a_pipe_prints_a_line_every_period() -> None:
    out, clock = io.StringIO(), _Clock()
    r = StderrReporter(out, clock=clock)
    r.notice("paw fruit: training a rank-8 LoRA on 40 examples")
    for step in range(1, 101):
        clock.now = 100 + step * 0.5  # 50 s in all
        r.notice(f"paw fruit: step {step}/100 loss 0.{step:04d} lr 2.00e-04")
    r.warning("a retracted version")
    lines = out.getvalue().splitlines()
    assert lines[0] == "wgtpm: paw fruit: training a rank-8 LoRA on 40 examples"
    assert lines[1] == "wgtpm: paw fruit: step 1/100 loss 0.0001 lr 2.00e-04 (ETA 0s)"
    assert lines[2] == "wgtpm: paw fruit: step 11/100 loss 0.0011 lr 2.00e-04 (ETA 40s)"
    assert lines[-2] == "wgtpm: paw fruit: step 100/100 loss 0.0100 lr 2.00e-04 (done in 50s)"
    assert lines[-1] == "wgtpm: warning: a retracted version"
    assert 11 <= len(lines) <= 14


def test_training_on_a_terminal_rewrites_one_line() -> None:
    out, clock = io.StringIO(), _Clock()
    r = StderrReporter(out, tty=True, clock=clock)
    for epoch in range(1, 5):
        clock.now = float(epoch)
        r.notice(f"train xor: epoch {epoch}/4 loss 0.5")
    r.notice("wrote it")
    text = out.getvalue()
    assert text.count("\r") == 4
    assert "train xor [" + "#" * 12 + "." * 12 + "] epoch 2/4 loss 0.5 ETA 1s" in text
    assert text.endswith("epoch 4/4 loss 0.5 done in 3s\nwgtpm: wrote it\n")


def test_a_line_printed_mid_training_on_a_terminal_starts_on_a_new_line() -> None:
    out, clock = io.StringIO(), _Clock()
    r = StderrReporter(out, tty=True, clock=clock)
    r.notice("train xor: epoch 1/4 loss 0.5")
    r.warning("slow server")
    assert out.getvalue().endswith("epoch 1/4 loss 0.5 ETA 0s\nwgtpm: warning: slow server\n")


def test_quiet_prints_no_training_progress_but_every_notice() -> None:
    out, clock = io.StringIO(), _Clock()
    r = StderrReporter(out, progress=False, clock=clock)
    for epoch in range(1, 4):
        r.notice(f"train xor: epoch {epoch}/3 loss 0.5")
    r.notice("building artifact xor (1/1) from xor.wgt")
    assert out.getvalue() == "wgtpm: building artifact xor (1/1) from xor.wgt\n"


def test_on_a_terminal_a_failed_download_ends_its_bar_and_the_others_finish() -> None:
    out = io.StringIO()
    r = StderrReporter(out, tty=True)
    r.start("a@v1.0.0", 1000)
    r.start("b@v1.0.0", 10)
    r.advance("a@v1.0.0", 500)
    r.fail("a@v1.0.0")  # the first bar goes: the second's task id must still find it
    r.advance("b@v1.0.0", 10)
    r.finish("b@v1.0.0")
    lines = [line for line in out.getvalue().splitlines() if line]
    assert lines == ["downloaded b@v1.0.0 (10 B)"]


def test_an_upload_is_worded_as_one_on_a_pipe_and_a_terminal() -> None:
    out, clock = io.StringIO(), _Clock()
    r = StderrReporter(out, clock=clock)
    mib = 1 << 20
    begin(r, "xor--weights.safetensors", 10 * mib, upload=True)
    begin(r, "m@v1.0.0", 1000)  # a download at the same time keeps its words
    clock.now += 6
    r.advance("xor--weights.safetensors", 4 * mib)
    r.advance("m@v1.0.0", 1000)
    r.finish("m@v1.0.0")
    r.advance("xor--weights.safetensors", 6 * mib)
    r.finish("xor--weights.safetensors")
    assert out.getvalue().splitlines() == [
        "wgtpm: uploading xor--weights.safetensors: 4.0 MiB of 10.0 MiB (40%)",
        "wgtpm: downloading m@v1.0.0: 0 B of 1000 B (0%)",
        "wgtpm: downloaded m@v1.0.0 (1000 B)",
        "wgtpm: uploaded xor--weights.safetensors (10.0 MiB)",
    ]
    tty = io.StringIO()
    t = StderrReporter(tty, tty=True)
    begin(t, "wgt.mod", 35, upload=True)
    t.advance("wgt.mod", 35)
    t.finish("wgt.mod")
    assert [line for line in tty.getvalue().splitlines() if line] == ["uploaded wgt.mod (35 B)"]
