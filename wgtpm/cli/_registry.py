"""``wgtpm registry serve|token|key|gc``: run a registry, manage its tokens, show its log's
key, collect its garbage.

Imports nothing of the server (starlette, sqlalchemy, uvicorn, boto3) until
a command runs, so the rest of ``wgtpm`` starts as fast without the
``registry`` extra installed.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .._errors import UsageError, WgtpmError
from .._extras import require

if TYPE_CHECKING:
    from registry.config import Config

__all__ = ["register"]


def _storage_flags(p: Any, store: bool) -> None:
    p.add_argument(
        "--data",
        metavar="DIR",
        help="data folder (default: $WGTPM_REGISTRY_DATA, else the user data dir)",
    )
    p.add_argument(
        "--db",
        metavar="URL",
        help="database: sqlite:///PATH or postgresql://... (default: SQLite in DIR)",
    )
    if store:
        p.add_argument(
            "--store",
            metavar="URL",
            help=(
                "blobs: a folder, s3://bucket/prefix or oci://REGISTRY/REPOSITORY "
                "(default: DIR/blobs)"
            ),
        )
        p.add_argument(
            "--s3-endpoint", metavar="URL", help="S3 endpoint (default: $AWS_ENDPOINT_URL)"
        )


_SUMDB_HELP = (
    "The checksum log is signed with an Ed25519 key: WGTPM_REGISTRY_SUMDB_KEY (the key itself), "
    "else --sumdb-key-file / WGTPM_REGISTRY_SUMDB_KEY_FILE, else DIR/sumdb.key, created on first "
    "start. Replicas on one database must share one key: copy DIR/sumdb.key to each, or give "
    "each the same --sumdb-key-file or WGTPM_REGISTRY_SUMDB_KEY (a replica with another key "
    "refuses to start). 'wgtpm registry key' prints the verifier key clients put in WGTSUMDB."
)


def _sumdb_flags(p: Any) -> None:
    p.add_argument(
        "--sumdb-name",
        metavar="NAME",
        help="checksum database name for a new key (default: $WGTPM_REGISTRY_SUMDB_NAME, "
        "else this host's name); served at /sumdb/NAME/",
    )
    p.add_argument(
        "--sumdb-key-file",
        metavar="FILE",
        help="the signer key (PRIVATE+KEY+...), shared by all replicas "
        "(default: $WGTPM_REGISTRY_SUMDB_KEY_FILE, else DIR/sumdb.key)",
    )


#: What the registry's database needs (SQLite or PostgreSQL: psycopg, asked for by its URL).
STORES = ("sqlalchemy", "alembic")
#: What serving needs besides: the web framework and server (boto3 only for an s3:// store).
SERVES = ("starlette", "uvicorn", *STORES)


def register(sub: Any) -> None:
    p = sub.add_parser(
        "registry", help="run a wgtpm registry, manage its tokens, show its checksum log's key"
    )
    rsub = p.add_subparsers(dest="registrycmd", metavar="SUBCOMMAND")

    s = rsub.add_parser(
        "serve",
        help="serve the proxy protocol, the publish API and the checksum database (uvicorn)",
        description=_SUMDB_HELP,
    )
    s.add_argument(
        "--host", help="address to listen on (default: $WGTPM_REGISTRY_HOST, else 127.0.0.1)"
    )
    s.add_argument("--port", type=int, help="port (default: $WGTPM_REGISTRY_PORT, else 8080)")
    s.add_argument(
        "--workers",
        type=int,
        default=1,
        metavar="N",
        help="processes serving one port, each with its own connections to the stores (default: 1)",
    )
    _storage_flags(s, store=True)
    _sumdb_flags(s)
    s.add_argument(
        "--upstream",
        metavar="LIST",
        help="caching proxy for modules not hosted here: a WGTPROXY list such as 'direct' or "
        "'https://proxy.example,direct' (default: $WGTPM_REGISTRY_UPSTREAM, else off: no "
        "proxying). 'direct' uses this server's GITHUB_TOKEN, HF_TOKEN, PAW_API_KEY and "
        "GITHUB_API_URL, HF_ENDPOINT, PAW_API_URL; credentials are never sent to clients",
    )
    s.add_argument(
        "--hf-allow",
        metavar="LIST",
        help="Hugging Face repositories the Hub API (HF_ENDPOINT=this registry) mirrors: "
        "OWNER/REPO and OWNER/* separated by commas (default: $WGTPM_REGISTRY_HF_ALLOW, else all)",
    )
    s.add_argument(
        "--offline",
        action="store_true",
        default=None,
        help="serve only what is stored, never the upstream (default: $WGTPM_REGISTRY_OFFLINE)",
    )
    s.add_argument(
        "--public-url",
        metavar="URL",
        help="the URL clients reach this registry at, printed on its pages (HF_ENDPOINT=URL); "
        "set it behind a proxy or a DNS name, e.g. https://models.example.com (default: "
        "$WGTPM_REGISTRY_PUBLIC_URL, else http://HOST:PORT as listened on). Never taken from "
        "a request's Host",
    )
    s.add_argument(
        "--access-log",
        metavar="off|stdout|FILE",
        help="where each request's JSON line goes: off, stdout, or appended to FILE (reopened "
        "when logrotate moves it); errors always go to stderr (default: "
        "$WGTPM_REGISTRY_ACCESS_LOG, else stdout)",
    )
    s.add_argument(
        "--access-log-sample",
        type=int,
        metavar="N",
        help="log 1 request in N (answers of 500 and above always; default: "
        "$WGTPM_REGISTRY_ACCESS_LOG_SAMPLE, else 1: every request)",
    )
    s.set_defaults(run=_serve)

    k = rsub.add_parser(
        "key",
        help="print the checksum database's verifier key (name+hash+base64) as the last line",
        description=_SUMDB_HELP,
    )
    k.add_argument(
        "--data",
        metavar="DIR",
        help="data folder (default: $WGTPM_REGISTRY_DATA, else the user data dir)",
    )
    _sumdb_flags(k)
    k.set_defaults(run=_key)

    g = rsub.add_parser(
        "gc",
        help="remove dead uploads' spool files, expired uploads and unreferenced blobs",
        description="Remove what crashes and abandoned uploads leave: spool files not written "
        "for an hour, uploads past their 7 days, and blobs that no version, upload or "
        "attestation references and that were written more than --grace seconds ago. Safe "
        "to run while replicas serve (see registry/gc.py). Prints one line per kind.",
    )
    _storage_flags(g, store=True)
    g.add_argument(
        "--grace",
        type=float,
        metavar="SECONDS",
        default=None,
        help="keep unreferenced blobs written less than this long ago (default: 86400, a day; "
        "it must exceed the longest publish)",
    )
    g.add_argument("--dry-run", action="store_true", help="list what would go; remove nothing")
    g.set_defaults(run=_gc)

    t = rsub.add_parser("token", help="create, list and revoke access tokens")
    tsub = t.add_subparsers(dest="tokencmd", metavar="SUBCOMMAND")
    c = tsub.add_parser("create", help="create a token; prints it as the last line (shown once)")
    c.add_argument(
        "--prefix",
        required=True,
        metavar="MODULE_PREFIX",
        help="modules it covers, e.g. example.com/team",
    )
    c.add_argument(
        "--scope",
        choices=("publish", "read"),
        default="publish",
        help="publish: may publish and read; read: may only read (default: publish)",
    )
    _storage_flags(c, store=False)
    c.set_defaults(run=_token_create)
    ls = tsub.add_parser("list", help="list tokens (never their secrets)")
    _storage_flags(ls, store=False)
    ls.set_defaults(run=_token_list)
    r = tsub.add_parser("revoke", help="revoke a token by its id")
    r.add_argument("id", help="the token's id, as 'wgtpm registry token list' shows it")
    _storage_flags(r, store=False)
    r.set_defaults(run=_token_revoke)
    t.set_defaults(run=lambda a: (t.print_help(sys.stderr), 2)[1])
    p.set_defaults(run=lambda a: (p.print_help(sys.stderr), 2)[1])


def _config(args: argparse.Namespace) -> Config:
    from registry.config import Config, default_data_dir

    return Config(
        data=Path(args.data) if args.data else default_data_dir(),
        db=getattr(args, "db", None),
        store=getattr(args, "store", None),
        s3_endpoint=getattr(args, "s3_endpoint", None),
        sumdb_name=getattr(args, "sumdb_name", None),
        sumdb_key_file=Path(args.sumdb_key_file) if getattr(args, "sumdb_key_file", None) else None,
        upstream=getattr(args, "upstream", None),
        hf_allow=getattr(args, "hf_allow", None),
        offline=getattr(args, "offline", None),
        public_url=getattr(args, "public_url", None),
    )


def _registry_error(exc: Exception) -> WgtpmError:
    return WgtpmError(f"registry: {exc}")


def _with_public_url(config: Config, host: str, port: int) -> Config:
    """``config`` with its public URL checked, and set to ``http://HOST:PORT`` (the address
    ``serve`` listens on) when neither ``--public-url`` nor the environment names one."""
    import dataclasses

    try:
        if config.public_base():
            return config
    except ValueError as exc:
        given = "--public-url" if config.public_url else "WGTPM_REGISTRY_PUBLIC_URL"
        raise UsageError(f"{given}: {exc}") from exc
    bound = f"[{host}]" if ":" in host else host
    return dataclasses.replace(config, public_url=f"http://{bound}:{port}")


def _serve(args: argparse.Namespace) -> int:
    require("registry", *SERVES, purpose="wgtpm registry serve")
    config = _config(args)
    from registry import RegistryError
    from registry.server import serve

    host = args.host or os.environ.get("WGTPM_REGISTRY_HOST") or "127.0.0.1"
    port = args.port
    if port is None:
        env = os.environ.get("WGTPM_REGISTRY_PORT", "8080")
        if not env.isdigit():
            raise UsageError(f"WGTPM_REGISTRY_PORT={env!r} is not a port number")
        port = int(env)
    config = _with_public_url(config, host, port)
    access_log = args.access_log or os.environ.get("WGTPM_REGISTRY_ACCESS_LOG") or "stdout"
    sample = args.access_log_sample
    if sample is None:
        env = os.environ.get("WGTPM_REGISTRY_ACCESS_LOG_SAMPLE", "1")
        if not env.isdigit():
            raise UsageError(f"WGTPM_REGISTRY_ACCESS_LOG_SAMPLE={env!r} is not a whole number")
        sample = int(env)
    try:
        if args.workers < 1:
            raise UsageError(f"--workers must be 1 or more, not {args.workers}")
        if sample < 1:
            raise UsageError(f"--access-log-sample must be 1 or more, not {sample}")
        _check_port(host, port)
        serve(
            config,
            host=host,
            port=port,
            workers=args.workers,
            access_log=access_log,
            access_sample=sample,
        )
    except RegistryError as exc:
        raise _registry_error(exc) from exc
    return 0


def _check_port(host: str, port: int) -> None:
    """A usage error when ``host:port`` is taken, saying whether a registry holds it (it
    answers ``/healthz``) and what to do; before the stores are opened, so that the
    error is one line and not uvicorn's log. The socket is bound as uvicorn binds it
    (``SO_REUSEADDR``), then closed for uvicorn to bind."""
    import errno
    import socket

    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except OSError:
        return  # uvicorn says what is wrong with the host
    family, kind, proto, _, addr = infos[0]
    with socket.socket(family, kind, proto) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind(addr)
            return
        except OSError as exc:
            if exc.errno != errno.EADDRINUSE:
                return  # uvicorn says it (a permission, an address not of this machine)
    who = "a wgtpm registry" if _answers_healthz(host, port) else "another program"
    raise UsageError(
        f"port {port} on {host} is in use, by {who}; stop it, or serve on another port "
        f"with --port (or WGTPM_REGISTRY_PORT)"
    )


def _answers_healthz(host: str, port: int) -> bool:
    """Whether ``http://host:port/healthz`` answers as a registry does (``{"status": "ok"}``)."""
    import json
    import urllib.request

    if host in ("0.0.0.0", "::", ""):
        host = "127.0.0.1"
    shown = f"[{host}]" if ":" in host else host
    try:
        with urllib.request.urlopen(f"http://{shown}:{port}/healthz", timeout=1) as resp:
            return bool(json.loads(resp.read(1000)) == {"status": "ok"})
    except (OSError, ValueError):
        return False


def _with_meta(args: argparse.Namespace, fn: Any, *, creates: bool = False) -> int:
    """``fn(meta)`` on the registry's database. A SQLite file that is not there yet is an
    error (a mistyped or forgotten ``--data``), unless ``creates``: then it is made, and
    said, since a token in a database no server uses is of no use."""
    require("registry", *STORES, purpose=f"wgtpm registry token {args.tokencmd}")
    config = _config(args)
    from registry import RegistryError
    from registry.metadata import open_metadata_store

    new = _new_sqlite(config.db_url())
    if new is not None and not creates:
        raise UsageError(
            f"no registry database at {new}: pass the --data (or --db) that "
            "'wgtpm registry serve' uses"
        )
    try:
        config.data.mkdir(parents=True, exist_ok=True)
        meta = open_metadata_store(config.db_url())
        try:
            code: int = fn(meta)
        finally:
            meta.close()
    except RegistryError as exc:
        raise _registry_error(exc) from exc
    if new is not None:
        print(
            f"wgtpm: there was no registry database at {new}: created it; "
            "'wgtpm registry serve' with the same --data (or --db) serves it",
            file=sys.stderr,
        )
    return code


def _new_sqlite(url: str) -> Path | None:
    """The file of the SQLite database ``url`` when there is none there yet, else ``None``."""
    from registry.metadata import normalise_url

    url = normalise_url(url)
    if not url.startswith("sqlite:///"):
        return None
    f = Path(url.removeprefix("sqlite:///"))
    return None if f.exists() else f


def _key(args: argparse.Namespace) -> int:
    """The verifier key, creating DIR/sumdb.key as ``serve`` would if there is none yet."""
    config = _config(args)
    from registry import RegistryError
    from registry.sumkey import signer_key, verifier_key

    try:
        vkey = verifier_key(signer_key(config.data, config.sumdb_name, config.sumdb_key_file))
    except RegistryError as exc:
        raise _registry_error(exc) from exc
    name = vkey.split("+")[0]
    print(f'checksum database {name}: clients set WGTSUMDB="{vkey} URL"')
    print(vkey)
    return 0


def _token_create(args: argparse.Namespace) -> int:
    from registry.service import create_token

    def run(meta: Any) -> int:
        text, rec = create_token(meta, args.prefix, args.scope)
        print(
            f"token {rec.id}: scope {rec.scope}, prefix {rec.prefix} (shown once; keep it secret)"
        )
        print(text)
        return 0

    return _with_meta(args, run, creates=True)


def _token_list(args: argparse.Namespace) -> int:
    def run(meta: Any) -> int:
        for t in meta.list_tokens():
            state = f"revoked {t.revoked}" if t.revoked else "active"
            print(f"{t.id}  {t.scope:<7}  {t.prefix}  created {t.created}  {state}")
        return 0

    return _with_meta(args, run)


def _token_revoke(args: argparse.Namespace) -> int:
    def run(meta: Any) -> int:
        if not meta.revoke_token(args.id):
            raise UsageError(f"no token {args.id!r} (see wgtpm registry token list)")
        print(f"revoked {args.id}")
        return 0

    return _with_meta(args, run)


def _gc(args: argparse.Namespace) -> int:
    """One garbage collection run on the stores ``serve`` would use (:mod:`registry.gc`)."""
    require("registry", *STORES, purpose="wgtpm registry gc")
    config = _config(args)
    from registry import RegistryError
    from registry.gc import GC_GRACE_SECONDS, GcOptions, collect
    from registry.metadata import open_metadata_store
    from registry.stores import open_blob_store

    grace = GC_GRACE_SECONDS if args.grace is None else args.grace
    if not grace >= 0:
        raise UsageError(f"--grace must be 0 or more seconds, not {args.grace}")
    new = _new_sqlite(config.db_url())
    if new is not None:
        raise UsageError(
            f"no registry database at {new}: pass the --data (or --db) that "
            "'wgtpm registry serve' uses"
        )
    try:
        meta = open_metadata_store(config.db_url())
        try:
            blobs = open_blob_store(
                config.store_url(),
                endpoint=config.s3_endpoint,
                spool=config.data / "spool",
                sweep=False,  # collect() sweeps it, and not in a dry run
            )
            try:
                report = collect(meta, blobs, GcOptions(grace=grace, dry_run=args.dry_run))
            finally:
                blobs.close()
        finally:
            meta.close()
    except RegistryError as exc:
        raise _registry_error(exc) from exc
    for line in report.lines():
        print(line)
    return 0
