"""Revoked signing keys: a list of key fingerprints no signature may be accepted by.

A publisher whose key leaked (or was retired) publishes a revocation list;
consumers name it on their trust line, and a registry's operator installs it
so the version page says so::

    trust github.com/acme/* key=keys/acme.pub revoked=keys/acme.revoked

The file is text, one key a line, ``#`` starting a comment::

    # acme's revoked release keys
    sha256:3f2a...64 hex...  2026-11-02  the CI runner's key leaked

``sha256:HEX`` is the key's fingerprint: the sha256 of its PEM
SubjectPublicKeyInfo, which is also the ``hint`` model-signing writes into a
bundle (``wgtpm key fingerprint FILE`` prints it). The date (when it was
revoked) and the reason are optional and only shown. A key bundle has no
trusted time of signing, so a revoked key's signatures are refused whatever
their date: the publisher signs its releases again with its new key (a
signature lies beside the index, outside h1, so re-signing changes no h1).
"""

from __future__ import annotations

import datetime
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

__all__ = ["RevocationFile", "Revoked", "parse_revoked", "read_revoked"]

_FPR = re.compile(r"(?:sha256:)?([0-9a-fA-F]{64})")
_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")


@dataclass(frozen=True)
class Revoked:
    """One revoked key: its fingerprint (64 lower-case hex), when and why ("" if unsaid)."""

    fingerprint: str
    date: str = ""
    reason: str = ""

    def said(self) -> str:
        """``revoked 2026-11-02: the CI key leaked`` (as much as the list says)."""
        when = f" {self.date}" if self.date else ""
        why = f": {self.reason}" if self.reason else ""
        return f"revoked{when}{why}"


def parse_revoked(text: str, name: str) -> dict[str, Revoked]:
    """The revoked keys of the list ``text`` (the file ``name``, for errors), by
    fingerprint; :class:`ValueError` naming ``name:line`` for a malformed line."""
    out: dict[str, Revoked] = {}
    for n, raw in enumerate(text.splitlines(), 1):
        words = raw.split("#", 1)[0].split()
        if not words:
            continue
        m = _FPR.fullmatch(words[0])
        if m is None:
            raise ValueError(
                f"{name}:{n}: {words[0][:80]!r} is not a key fingerprint (sha256:64 hex; "
                "wgtpm key fingerprint FILE prints it)"
            )
        date = ""
        if len(words) > 1 and _DATE.fullmatch(words[1]):
            try:
                datetime.date.fromisoformat(words[1])
            except ValueError:
                raise ValueError(f"{name}:{n}: {words[1]} is not a date") from None
            date, words = words[1], words[1:]
        fpr = m.group(1).lower()
        out[fpr] = Revoked(fpr, date, " ".join(words[1:]))
    return out


def read_revoked(path: Path, name: str) -> Mapping[str, Revoked]:
    """The revocation list at ``path`` (called ``name`` in errors); :class:`ValueError`
    in one line when it cannot be read or is malformed."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        why = getattr(exc, "strerror", None) or str(exc)
        raise ValueError(f"cannot read the revocation list {name} ({why})") from exc
    return parse_revoked(text, name)


class RevocationFile:
    """A revocation list a long-running process (the registry) consults: read again when
    the file's size or mtime changes, so an operator's edit counts without a restart.
    A missing file is an empty list; a malformed one raises :class:`ValueError` on
    :meth:`current`, and is logged by the caller."""

    def __init__(self, path: Path | None) -> None:
        self.path = path
        self._stamp: tuple[int, int] | None = None
        self._keys: Mapping[str, Revoked] = {}

    def current(self) -> tuple[str, Mapping[str, Revoked]]:
        """A tag that changes whenever the list does (for caches), and the list."""
        if self.path is None:
            return "", {}
        try:
            st = self.path.stat()
        except FileNotFoundError:
            self._stamp, self._keys = None, {}
            return "", {}
        except OSError as exc:
            raise ValueError(f"cannot read the revocation list {self.path} ({exc})") from exc
        stamp = (st.st_mtime_ns, st.st_size)
        if stamp != self._stamp:
            self._keys = read_revoked(self.path, str(self.path))  # raises before the swap
            self._stamp = stamp
        return f"{stamp[0]}:{stamp[1]}", self._keys
