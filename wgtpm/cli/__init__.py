"""The ``wgtpm`` command line.

Each command lives in its own module (``_modcmds.py``, ``_cache.py`` ...)
that defines ``register(subparsers)`` (see :mod:`wgtpm.cli._parser`); the
module must import nothing heavy at import time (torch, transformers, httpx
...): load those inside the command's ``run`` so that ``wgtpm get`` starts
about as fast as Python itself.

This module itself imports only ``os`` and ``sys``: :func:`main` answers a
plain ``wgtpm get`` whose no-op stamp holds (:data:`PLAIN_GET`), and a plain
``wgtpm --version``, before argparse and the command modules are loaded, since
loading them costs more than the whole check (:mod:`wgtpm.modload.stamp`).
"""

from __future__ import annotations

import os
import sys

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (a no-op get never needs it)
if TYPE_CHECKING:
    import argparse
    from collections.abc import Sequence

    from ._parser import build_parser

__all__ = ["DEBUG_ENV", "PLAIN_GET", "build_parser", "entry", "main", "version_line"]

# Set to 1 to print the traceback of an internal error.
DEBUG_ENV = "WGTPM_DEBUG"

#: The command lines of a plain ``wgtpm get``, which scripts run before they use a project:
#: when the project's stamp holds, it has nothing to do, and :func:`main` says so before the
#: parser is loaded. The parser reads each as a no-op ``get`` (tests/test_noop_get.py checks).
PLAIN_GET = (("get",), ("get", "-q"), ("get", "--quiet"))


def __getattr__(name: str) -> object:
    if name == "build_parser":  # lazy, so that a no-op get does not load argparse
        from ._parser import build_parser

        return build_parser
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _answered_by_stamp(argv: list[str]) -> bool:
    """Whether ``argv`` is a :data:`PLAIN_GET` whose project's no-op stamp holds.

    With ``WGTFLAGS`` set, the full path parses it first (a bad one is an
    error, and ``-mod=vendor`` takes no stamp), then checks the same stamp.
    """
    if tuple(argv) not in PLAIN_GET or os.environ.get("WGTFLAGS"):
        return False
    from pathlib import Path

    from .._cachedir import default_root
    from ..modload.stamp import up_to_date

    try:
        return up_to_date(Path.cwd(), default_root())
    except OSError:
        return False  # the full path meets it again and says what is wrong


def version_line() -> str:
    """What ``wgtpm --version`` prints: answered here for a plain ``wgtpm --version``, and by
    argparse's version action otherwise (``wgtpm -C DIR --version``)."""
    from .. import __version__

    return f"wgtpm {__version__}"


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv == ["--version"]:  # before argparse and the command modules, as a no-op get
        print(version_line())
        return 0
    if _answered_by_stamp(argv):
        return 0  # this exact wgt.mod and wgt.sum were fully fetched and verified before
    from .._errors import UsageError, WgtpmError
    from ._parser import parse, print_json_error

    parser, args = parse(argv)
    run = getattr(args, "run", None)
    if run is None:
        parser.print_help(sys.stderr)
        return 2
    from .._interrupt import handling
    from .._report import set_network
    from ._render import StderrReporter

    set_network(StderrReporter(progress=False), trace=args.trace)
    try:
        if args.chdir:
            try:
                os.chdir(args.chdir)
            except OSError as exc:
                raise UsageError(f"-C {args.chdir}: {exc.strerror or exc}") from exc
        with handling():  # Ctrl-C stops the download threads too
            code: int = run(args)
        sys.stdout.flush()  # here, where a reader that left is seen (below)
    except BrokenPipeError as exc:
        if exc.filename is not None:  # a file of ours, not stdout
            return _fail(args, _os_error(exc), "os")
        return _stdout_gone()
    except WgtpmError as exc:
        return _fail(args, str(exc), _kind(exc))
    except OSError as exc:  # a file we could not read or write: say which, not a traceback
        return _fail(args, _os_error(exc), "os")
    except KeyboardInterrupt:
        print("wgtpm: interrupted", file=sys.stderr)
        return 130
    except Exception as exc:  # a bug: one line, the traceback only when asked for
        from .._extras import missing_extra_error

        missing = missing_extra_error(exc, f"wgtpm {args.command}")
        if missing is not None:  # an optional module no require() asked for first
            return _fail(args, str(missing), _kind(missing))
        if os.environ.get(DEBUG_ENV, "") not in ("", "0"):
            import traceback

            traceback.print_exc()
        if getattr(args, "json", False):
            print_json_error(
                f"internal error: {type(exc).__name__}: {_first_line(exc)}", "internal"
            )
        print(
            f"wgtpm: internal error: {type(exc).__name__}: {_first_line(exc)}\n"
            f"wgtpm: this is a bug in wgtpm; run again with {DEBUG_ENV}=1 for the traceback "
            "and report it",
            file=sys.stderr,
        )
        return 70  # EX_SOFTWARE
    return code


def entry() -> None:
    """The ``wgtpm`` program (``python -m wgtpm`` too): :func:`main`, then out at once.

    The interpreter's own exit frees every module and object one by one, which after a
    ``wgtpm get`` that used the network costs 40-50 ms, more than the rest of a no-op
    ``get``. What of that exit matters is done here: the threads that are not daemons are
    waited for (``threading``'s own shutdown, which also stops idle thread pools), the
    ``atexit`` functions run, stdout and stderr are flushed; then the process ends with
    ``os._exit``. Every file wgtpm writes is closed (and fsynced where it must be) before
    :func:`main` returns, so nothing is left for the teardown to write. Tests and other
    callers in the same process use :func:`main`, which returns.
    """
    try:
        try:
            code = main()
        except SystemExit as exc:  # argparse's --help and usage errors
            code = _exit_code(exc.code)
        threading = sys.modules.get("threading")
        shutdown = getattr(threading, "_shutdown", None)
        if shutdown is not None:
            shutdown()
    except KeyboardInterrupt:  # before main's own handler, or while threads finish
        print("wgtpm: interrupted", file=sys.stderr)
        code = 130
    import atexit

    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except BrokenPipeError:
            code = code or 141  # the reader left after the last write (see _stdout_gone)
        except (OSError, ValueError):
            pass
    os._exit(code)


def _exit_code(code: object) -> int:
    """The exit status ``sys.exit(code)`` would give."""
    if code is None:
        return 0
    if isinstance(code, int):
        return code & 0xFF
    print(code, file=sys.stderr)
    return 1


def _stdout_gone() -> int:
    """The reader of stdout has gone (``wgtpm list -m all | head -1``): stop without a word,
    as a shell tool stopped by SIGPIPE does (141 = 128 + SIGPIPE). What is left of stdout
    goes to /dev/null, so that Python's last flush at exit has nothing to complain of."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError):  # no file descriptor (stdout replaced in-process)
        pass
    return 141


def _fail(args: argparse.Namespace, message: str, kind: str) -> int:
    """Print an error: one ``wgtpm:`` line on stderr, and under ``--json`` a JSON object on stdout.

    The JSON form is ``{"error": {"message": MESSAGE, "kind": KIND}}``, KIND
    the error's class in lower case without ``Error`` (``usage``, ``readonly``,
    ``fetch``, ``os`` ...), so a script reads stdout alone.
    """
    print(f"wgtpm: {message}", file=sys.stderr)
    if getattr(args, "json", False):
        from ._parser import print_json_error

        print_json_error(message, kind)
    return 1


def _kind(exc: BaseException) -> str:
    """``UsageError`` -> ``usage``, ``NotFoundError`` -> ``not_found``."""
    name = type(exc).__name__.removesuffix("Error") or "error"
    return "".join("_" + c.lower() if c.isupper() and i else c.lower() for i, c in enumerate(name))


def _os_error(exc: OSError) -> str:
    """``FILE: reason`` (``FILE -> OTHER: reason`` for a rename), or just the reason."""
    what = exc.strerror or str(exc)
    if exc.filename is None:
        return what
    where = _final_name(str(exc.filename))
    if exc.filename2 is not None and _final_name(str(exc.filename2)) != where:
        where += f" -> {_final_name(str(exc.filename2))}"
    return f"{where}: {what}"


def _final_name(name: str) -> str:
    """The file a temporary file of ``write_atomic`` stands for: ``DIR/.wgt.sum.k3j.tmp`` ->
    ``DIR/wgt.sum`` (what the user knows; the temporary name is an implementation detail)."""
    import re

    head, sep, base = name.rpartition("/")
    m = re.fullmatch(r"\.(.+)\.[A-Za-z0-9_]+\.tmp", base)
    return head + sep + m.group(1) if m else name


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    line = text[0] if text else ""
    return line if len(line) <= 200 else line[:200] + "..."
