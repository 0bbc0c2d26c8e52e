"""The no-op ``wgtpm get``: answered by the stamp before the parser loads, never fooled by
a cached index or wgt.mod that changed after it was verified (SECURITY.md).

The stamp's format and why a stat signature may stand for a hash are in
:mod:`wgtpm.modload.stamp`; these tests run the real command against a real
cache and change its files the ways an attacker or a tool could.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.test_get import graph  # noqa: F401  (a fixture)
from wgtpm.cli import PLAIN_GET, _modcmds, build_parser
from wgtpm.modload import stamp

ROOT = Path(__file__).resolve().parent.parent
INDEX = "github.com/acme/b/@v/v0.2.0.index.json"  # the selected b's index
MOD = "github.com/acme/c/@v/v0.1.0.mod"  # c's wgt.mod, whose requirements MVS follows


def _cache() -> Path:
    return Path(os.environ["WGTPM_CACHE"])


def _stamp_lines() -> dict[str, tuple[str, str]]:
    """The one stamp's lines: path -> (sha256 or '-', signature or '')."""
    (p,) = (_cache() / "meta" / "done").iterdir()
    out = {}
    for line in p.read_text().splitlines():
        head, _, name = line.partition("  ")
        want, _, signature = head.partition(" ")
        out[name] = (want, signature)
    return out


def _next_tick(d: Path, after_ns: int) -> None:
    """Wait until a file created in ``d`` gets a ctime later than ``after_ns``."""
    while True:
        fd, name = tempfile.mkstemp(dir=d)
        ctime = os.fstat(fd).st_ctime_ns
        os.close(fd)
        os.unlink(name)
        if ctime > after_ns:
            return
        time.sleep(0.001)


def _signature(p: Path) -> str:
    st = p.stat()
    return f"{st.st_dev}:{st.st_ino}:{st.st_size}:{st.st_mtime_ns}:{st.st_ctime_ns}"


@pytest.fixture
def stamped(wgtpm, tree, project, graph, monkeypatch) -> Path:  # noqa: F811
    """A project whose full ``get`` is done, offline from then on, every metadata line signed."""
    monkeypatch.setenv("WGTPROXY", tree.url)
    assert wgtpm("get", "github.com/acme/a@v0.1.0", cwd=project).code == 0
    monkeypatch.setenv("WGTPROXY", "off")
    meta = [Path(n) for n, (want, _) in _stamp_lines().items() if want != "-"]
    _next_tick(_cache() / "meta" / "done", max(p.stat().st_ctime_ns for p in meta))
    assert wgtpm("get", cwd=project).code == 0  # signs what the full get could not (same tick)
    lines = _stamp_lines()
    assert {str(p) for p in meta} == {n for n, (w, _) in lines.items() if w != "-"}
    assert all(lines[str(p)][1] for p in meta), lines
    return project


@pytest.mark.parametrize("argv", PLAIN_GET, ids=" ".join)
def test_plain_get_command_lines_are_no_op_gets_to_the_parser(argv: tuple[str, ...]) -> None:
    """What main() answers before parsing is what the parser would send down the no-op path."""
    args = build_parser().parse_args(list(argv))
    assert args.run is _modcmds._get
    assert _modcmds._is_noop(args, "")


def _run_main(argv: tuple[str, ...], cwd: Path, **env: str) -> tuple[int, list[str]]:
    """``main(argv)`` in a fresh interpreter: its exit code, and which of the modules that a
    no-op get does not need it loaded."""
    code = (
        "import sys\n"
        "from wgtpm.cli import main\n"
        "code = main(sys.argv[1:])\n"
        "unneeded = ('argparse', 'typing', 'json', 'shutil', 'wgtpm._errors', 'wgtpm.cache',\n"
        "            'wgtpm.modload.files', 'wgtpm.modload.options', 'wgtpm.cli._modcmds')\n"
        "print(code, *[m for m in unneeded if m in sys.modules])\n"
    )
    full_env = {**os.environ, **env, "PYTHONPATH": str(ROOT)}
    r = subprocess.run(
        [sys.executable, "-c", code, *argv],
        capture_output=True,
        text=True,
        cwd=cwd,
        env=full_env,
        check=True,
    )
    got, *loaded = r.stdout.split()
    return int(got), loaded


def test_a_plain_get_is_answered_before_the_parser_loads(stamped: Path) -> None:
    for argv in PLAIN_GET:
        assert _run_main(argv, stamped) == (0, [])
    # Anything else is parsed first, and then answered by the same stamp.
    code, loaded = _run_main(("get", "-j", "4"), stamped)
    assert code == 0 and "argparse" in loaded
    code, loaded = _run_main(("get",), stamped, WGTFLAGS="-mod=readonly")
    assert code == 0 and "argparse" in loaded


def _in_place(f: Path, edit: Callable[[bytes], bytes]) -> None:
    """Change ``f``'s bytes where they are, then put its mtime back."""
    st = f.stat()
    os.chmod(f, 0o644)
    with open(f, "r+b") as out:
        data = edit(out.read())
        out.seek(0)
        out.write(data)
        out.truncate()
    os.chmod(f, st.st_mode)
    os.utime(f, ns=(st.st_atime_ns, st.st_mtime_ns))


def _replaced(f: Path, edit: Callable[[bytes], bytes]) -> None:
    """Rename another file of the same size and mtime over ``f``."""
    st = f.stat()
    new = f.with_name(f.name + ".new")
    new.write_bytes(edit(f.read_bytes()))
    os.utime(new, ns=(st.st_atime_ns, st.st_mtime_ns))
    os.chmod(new, st.st_mode)
    os.chmod(f.parent, 0o755)
    os.replace(new, f)


def _flip_sha256(data: bytes) -> bytes:  # same size: an index with one file's sha256 changed
    at = data.index(b'"sha256": "') + len(b'"sha256": "')
    return data[:at] + (b"0" if data[at : at + 1] != b"0" else b"1") + data[at + 1 :]


def _other_requirement(data: bytes) -> bytes:  # same size: c requires b v0.3.0, not v0.2.0
    return data.replace(b"v0.2.0", b"v0.3.0")


@pytest.mark.parametrize("change", [_in_place, _replaced], ids=["in-place", "renamed-over"])
@pytest.mark.parametrize(
    ("meta", "edit"), [(INDEX, _flip_sha256), (MOD, _other_requirement)], ids=["index", "wgt.mod"]
)
def test_a_changed_signed_file_of_the_same_size_and_mtime_is_caught(
    wgtpm, stamped: Path, meta: str, edit: Callable[[bytes], bytes], change: Callable[..., None]
) -> None:
    """Size and mtime can be put back; the ctime (or the inode) cannot: the file is re-hashed."""
    f = _cache() / "download" / meta
    before = f.stat()
    change(f, edit)
    after = f.stat()
    assert (after.st_size, after.st_mtime_ns) == (before.st_size, before.st_mtime_ns)
    files = [(stamped / n).read_bytes() for n in ("wgt.mod", "wgt.sum")]
    r = wgtpm("get", cwd=stamped)
    assert r.code == 1
    assert "SECURITY ERROR: checksum mismatch" in r.err, r.err
    assert [(stamped / n).read_bytes() for n in ("wgt.mod", "wgt.sum")] == files


def test_a_touched_file_is_hashed_once_then_signed_again(
    wgtpm, stamped: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    f = _cache() / "download" / INDEX
    old = _stamp_lines()[str(f)]
    os.utime(f)  # new mtime and ctime, the same bytes
    _next_tick(_cache() / "meta" / "done", f.stat().st_ctime_ns)
    hashed: list[str] = []
    real_read = stamp._read

    def counting_read(name: str) -> tuple[str, os.stat_result | None]:
        hashed.append(name)
        return real_read(name)

    monkeypatch.setattr(stamp, "_read", counting_read)
    r = wgtpm("get", cwd=stamped)
    assert r.code == 0, r.err
    assert set(hashed) == {str(f)}  # the stamp answered: only the touched file was hashed
    new = _stamp_lines()[str(f)]
    assert new[0] == old[0] and new[1] and new[1] != old[1]
    hashed.clear()
    assert wgtpm("get", cwd=stamped).code == 0
    assert hashed == []  # one stat per file, no hashing


def test_a_changed_unsigned_file_is_caught(wgtpm, stamped: Path) -> None:
    """A line without a signature (an older stamp, or a racy file) is always re-hashed."""
    (p,) = (_cache() / "meta" / "done").iterdir()
    text = p.read_text()
    for name, (want, signature) in _stamp_lines().items():
        if signature:
            text = text.replace(f"{want} {signature}  {name}", f"{want}  {name}")
    p.write_text(text)
    f = _cache() / "download" / INDEX
    os.chmod(f, 0o644)
    f.write_bytes(_flip_sha256(f.read_bytes()))
    r = wgtpm("get", cwd=stamped)
    assert r.code == 1 and "SECURITY ERROR: checksum mismatch" in r.err, r.err


@pytest.mark.parametrize(
    ("ctime_vs_clock", "same_device", "signed"),
    [
        (-1, True, True),  # changed before the clock was read: any later change shows
        (0, True, False),  # the same tick as the clock: racy, a later change may not show
        (1, True, False),  # changed after the clock was read
        (-1, False, False),  # another file system's clock says nothing about this one
    ],
)
def test_a_signature_is_recorded_only_for_a_file_older_than_the_clock(
    tmp_path: Path, ctime_vs_clock: int, same_device: bool, signed: bool
) -> None:
    f = tmp_path / "v0.1.0.mod"
    f.write_bytes(b"module example.com/x\n")
    digest, st = stamp._read(str(f))
    assert st is not None
    clock = (st.st_dev if same_device else st.st_dev + 1, st.st_ctime_ns - ctime_vs_clock)
    line = stamp._line(str(f), digest, st, clock)
    want = f"{digest} {_signature(f)}  {f}" if signed else f"{digest}  {f}"
    assert line == want
    assert stamp._line(str(f), digest, None, clock) == f"{digest}  {f}"  # changed while read
