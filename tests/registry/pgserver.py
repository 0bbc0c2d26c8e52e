"""A throwaway PostgreSQL server for tests: ``initdb`` + ``pg_ctl`` on a free loopback port.

::

    with PostgresServer() as pg:
        url = pg.create_database("t1")   # postgresql://postgres@127.0.0.1:PORT/t1

The cluster lives in a fresh temporary folder, trusts local connections,
runs without fsync (tests need speed, not durability), and is stopped and
deleted on exit. PostgreSQL refuses to run as root, so as root the cluster
runs as the user ``wgtpmtest`` (created with ``useradd`` when missing)
through ``runuser``. :func:`find_bin` locates the binaries (``$WGTPM_PG_BIN``,
``/usr/lib/postgresql/*/bin``, or ``PATH``).
"""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import subprocess
import tempfile
from pathlib import Path
from types import TracebackType

from .helpers import free_port

__all__ = ["PostgresServer", "PostgresUnavailable", "find_bin"]

USER = "wgtpmtest"


class PostgresUnavailable(Exception):
    """No PostgreSQL binaries, or no way to run them here (the reason is the message)."""


def find_bin() -> Path:
    env = os.environ.get("WGTPM_PG_BIN")
    candidates = [env] if env else []
    candidates += sorted(glob.glob("/usr/lib/postgresql/*/bin"), reverse=True)
    on_path = shutil.which("initdb")
    if on_path:
        candidates.append(str(Path(on_path).parent))
    for c in candidates:
        if c and (Path(c) / "initdb").exists() and (Path(c) / "pg_ctl").exists():
            return Path(c)
    raise PostgresUnavailable("no initdb/pg_ctl found (install postgresql or set WGTPM_PG_BIN)")


class PostgresServer:
    """A PostgreSQL cluster of its own, started on enter and removed on exit."""

    def __init__(self) -> None:
        self.bin = find_bin()
        self.port = free_port()
        self.dir = Path(tempfile.mkdtemp(prefix="wgtpm-pg-"))
        self.data = self.dir / "data"
        self._prefix: list[str] = []
        if os.geteuid() == 0:
            self._as_user()

    def _as_user(self) -> None:
        try:
            pwd.getpwnam(USER)
        except KeyError:
            r = subprocess.run(
                ["useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin", USER],
                capture_output=True,
                text=True,
            )
            if r.returncode != 0:
                raise PostgresUnavailable(
                    f"running as root and cannot add user {USER}: {r.stderr}"
                ) from None
        if not shutil.which("runuser"):
            raise PostgresUnavailable("running as root and runuser is missing")
        pw = pwd.getpwnam(USER)
        os.chown(self.dir, pw.pw_uid, pw.pw_gid)
        self._prefix = ["runuser", "-u", USER, "--"]

    def _run(self, *args: str) -> None:
        r = subprocess.run([*self._prefix, *args], capture_output=True, text=True, timeout=120)
        if r.returncode != 0:
            raise PostgresUnavailable(f"{Path(args[0]).name} failed: {r.stdout}{r.stderr}")

    @property
    def url(self) -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/postgres"

    def start(self) -> None:
        self._run(
            str(self.bin / "initdb"), "-D", str(self.data), "-U", "postgres",
            "--auth=trust", "-E", "UTF8", "--no-sync", "--locale=C",
        )  # fmt: skip
        opts = (
            f"-p {self.port} -k {self.dir} -c listen_addresses=127.0.0.1 -c fsync=off "
            "-c synchronous_commit=off -c full_page_writes=off -c max_connections=200"
        )
        log = self.dir / "postgres.log"
        self._run(
            str(self.bin / "pg_ctl"),
            "-D",
            str(self.data),
            "-o",
            opts,
            "-l",
            str(log),
            "-w",
            "start",
        )

    def create_database(self, name: str) -> str:
        """A new empty database; returns its URL."""
        import psycopg

        with psycopg.connect(self.url, autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')  # type: ignore[arg-type]
        return self.url.rsplit("/", 1)[0] + "/" + name

    def halt(self) -> None:
        """Stop the server (an outage), keeping the cluster: :meth:`stop` still removes it."""
        self._run(str(self.bin / "pg_ctl"), "-D", str(self.data), "-m", "immediate", "-w", "stop")

    def stop(self) -> None:
        try:
            if (self.data / "postmaster.pid").exists():
                self._run(
                    str(self.bin / "pg_ctl"), "-D", str(self.data), "-m", "immediate", "-w", "stop"
                )
        finally:
            shutil.rmtree(self.dir, ignore_errors=True)

    def __enter__(self) -> PostgresServer:
        try:
            self.start()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(
        self, t: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()
