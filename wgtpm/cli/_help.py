"""``wgtpm help [TOPIC|COMMAND]``, and the environment variables wgtpm reads.

:data:`ENVIRONMENT` is the table that ``wgtpm help environment`` prints and
README.md repeats. The examples under every ``--help`` and "did you mean" are
:mod:`wgtpm.cli._finish`, which the parser runs without importing this module.
"""

from __future__ import annotations

import argparse
from typing import Any

from ._finish import choices, suggest

__all__ = ["ENVIRONMENT", "register"]

#: Every environment variable wgtpm reads: (name, what it does).
ENVIRONMENT: tuple[tuple[str, str], ...] = (
    (
        "WGTPROXY",
        "comma-separated module sources tried in order: proxy URLs, 'direct', 'off' "
        "(default: direct)",
    ),
    (
        "WGTPRIVATE",
        "module path globs fetched directly, never through a proxy nor looked up in "
        "the checksum database (e.g. github.com/acme/*)",
    ),
    ("WGTNOPROXY", "module path globs fetched directly (WGTPRIVATE implies it)"),
    (
        "WGTSUMDB",
        "the checksum database: its verifier key, then optionally a space and its URL "
        "(unset: none is used)",
    ),
    ("WGTNOSUMDB", "module path globs never looked up in the checksum database"),
    ("WGTTRUST", "off: skip the signature checks the main module's trust lines ask for"),
    (
        "SIGSTORE_ID_TOKEN",
        "an OIDC token: 'wgtpm publish' without --sign-key signs keylessly through Sigstore",
    ),
    (
        "ACTIONS_ID_TOKEN_REQUEST_URL",
        "set by GitHub Actions: publish signs keylessly with the workflow's identity",
    ),
    ("WGTPM_CACHE", "the module cache directory (default: ~/.cache/wgtpm); see 'wgtpm cache dir'"),
    ("WGTFLAGS", "default flags for every command, e.g. '-mod=mod' or '-mod=vendor'"),
    ("WGTPM_HTTP_TIMEOUT", "seconds to wait for a server's next bytes (default 30)"),
    ("WGTPM_HTTP_RETRIES", "retries of a failed request, 0 to 100 (default 4)"),
    (
        "WGTPM_HTTP_DEADLINE",
        "seconds a metadata request may take, retries included, and a publish step is "
        "tried again while a registry fails (default 30)",
    ),
    ("WGTPM_DEBUG", "1: print the traceback of an internal error"),
    ("WGTPM_TOKEN", "the access token 'wgtpm publish --to URL' sends to a wgtpm registry"),
    ("WGTPM_REGISTRY_HOST", "the address 'wgtpm registry serve' listens on (default 127.0.0.1)"),
    ("WGTPM_REGISTRY_PORT", "the port 'wgtpm registry serve' listens on (default 8080)"),
    ("WGTPM_REGISTRY_DATA", "the registry's data folder (default: the user data dir)"),
    ("WGTPM_REGISTRY_DB", "the registry's database URL (default sqlite:///DATA/registry.db)"),
    (
        "WGTPM_REGISTRY_STORE",
        "the registry's blob store: a folder, s3://bucket/prefix or oci://REGISTRY/REPOSITORY "
        "(default DATA/blobs)",
    ),
    (
        "WGTPM_REGISTRY_UPSTREAM",
        "the registry's caching-proxy upstream, a WGTPROXY list (default: off)",
    ),
    (
        "WGTPM_REGISTRY_HF_ALLOW",
        "the Hugging Face repositories the registry's Hub API mirrors (default: all)",
    ),
    ("WGTPM_REGISTRY_OFFLINE", "1: the registry serves only what it has stored"),
    (
        "WGTPM_REGISTRY_REVOKED_KEYS",
        "a file of revoked signing keys ('sha256:FPR [date] [reason]' lines): the registry "
        "refuses their publishes and shows them as revoked (default DATA/revoked-keys)",
    ),
    (
        "WGTPM_REGISTRY_KEEP_ALIVE_TIMEOUT",
        "seconds the registry keeps a connection with no request open (default 10)",
    ),
    (
        "WGTPM_REGISTRY_HEADER_TIMEOUT",
        "seconds the registry waits for a request's headers (default 15)",
    ),
    (
        "WGTPM_REGISTRY_BODY_TIMEOUT",
        "seconds a request body may send nothing to the registry (default 30)",
    ),
    (
        "WGTPM_REGISTRY_DRAIN_TIMEOUT",
        "seconds the registry reads the rest of a body it already answered (default 30)",
    ),
    (
        "WGTPM_REGISTRY_ACCESS_LOG",
        "where the registry's access log goes: off, stdout (default) or a file",
    ),
    ("WGTPM_REGISTRY_ACCESS_LOG_SAMPLE", "the registry logs 1 request in N (default 1: all)"),
    (
        "WGTPM_REGISTRY_PUBLIC_URL",
        "the URL the registry's pages give clients (default: the address it listens on)",
    ),
    ("WGTPM_REGISTRY_SUMDB_KEY", "the registry's checksum-log signer key itself"),
    ("WGTPM_REGISTRY_SUMDB_KEY_FILE", "a file holding the registry's signer key"),
    ("WGTPM_REGISTRY_SUMDB_NAME", "the name of a new checksum database (default: the host name)"),
    ("AWS_ENDPOINT_URL", "the S3 endpoint of a registry's s3:// blob store"),
    (
        "GITHUB_TOKEN",
        "a GitHub token, sent only to the GitHub API (private repositories, higher rate limits)",
    ),
    ("GITHUB_API_URL", "the GitHub API (default https://api.github.com; GitHub Enterprise)"),
    ("HF_TOKEN", "a Hugging Face token, sent only to the Hub (gated and private repositories)"),
    ("HUGGING_FACE_HUB_TOKEN", "the older name of HF_TOKEN, read when HF_TOKEN is unset"),
    ("HF_ENDPOINT", "the Hugging Face Hub (default https://huggingface.co; a mirror)"),
    ("PAW_API_KEY", "the key for the PAW hub (paw.* modules)"),
    ("PAW_API_URL", "the PAW hub's API"),
    (
        "PAW_CACHE_DIR",
        "the PAW SDK's cache that 'wgtpm paw install' fills (default ~/.cache/programasweights)",
    ),
    ("PAW_OFFLINE", "1: 'paw install' resolves runtimes without asking the PAW hub"),
    ("PAW_HF_ASSET_URL", "where the PAW compiler's mapper assets are fetched from as a fallback"),
    (
        "PAW_COMPILE_CACHE",
        "the cache of 'wgtpm paw compile' (default ~/.cache/programasweights/compile-by-training)",
    ),
    ("TEACHER_API_KEY", "the teacher endpoint's key when the spec names no api_key_env value"),
    ("TEACHER_API_URL", "replaces the default teacher endpoint (OpenAI-compatible)"),
    ("HF_HOME", "where a Hugging Face token saved by 'hf auth login' is read from"),
    ("HF_TOKEN_PATH", "the file of that saved Hugging Face token"),
    ("XDG_CACHE_HOME", "the base of the default HF_HOME (~/.cache)"),
    ("NETRC", "the netrc file with credentials for proxies (default ~/.netrc)"),
    (
        "WGTOCI",
        "module path globs whose host is an OCI registry, fetched there by 'direct'; "
        "PATTERN=HOST[:PORT] names the registry (e.g. oci.acme.internal)",
    ),
    ("WGTOCI_INSECURE", "OCI registries (HOST[:PORT] globs) spoken to over plain HTTP"),
    ("DOCKER_CONFIG", "the folder of Docker's config.json: OCI registry credentials (~/.docker)"),
    ("REGISTRY_AUTH_FILE", "OCI registry credentials read before config.json (podman's)"),
    (
        "SOURCE_DATE_EPOCH",
        "set by 'publish' and 'verify --rebuild' to the commit's time while they build; "
        "a PAW bundle's created_at",
    ),
)


def register(sub: Any) -> None:
    p = sub.add_parser("help", help="show help for a command, or a topic: environment")
    p.add_argument(
        "topic",
        nargs="*",
        metavar="TOPIC",
        help="'environment' (the variables wgtpm reads) or a command, e.g. 'get', 'cache verify'",
    )
    p.set_defaults(run=_run)


def _run(args: argparse.Namespace) -> int:
    from .._errors import UsageError
    from ._parser import build_parser

    topic = list(args.topic)
    if topic in (["environment"], ["env"]):
        print(environment_text())
        return 0
    parser = build_parser()
    target = parser
    for word in topic:
        known = choices(target)
        if word not in known:
            hint = suggest(word, [*known, "environment"])
            raise UsageError(f"unknown help topic {' '.join(topic)!r}{hint}; try 'wgtpm help'")
        target = known[word]
    target.print_help()
    if not topic:
        print("\nTopics: 'wgtpm help environment' lists the environment variables wgtpm reads.")
    return 0


def environment_text() -> str:
    width = max(len(n) for n, _ in ENVIRONMENT)
    lines = ["Environment variables wgtpm reads:", ""]
    lines += [f"  {name:<{width}}  {what}" for name, what in ENVIRONMENT]
    return "\n".join(lines)
