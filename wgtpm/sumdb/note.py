"""Signed notes: a text signed by one or more Ed25519 keys, in Go's exact format.

This is the format of ``golang.org/x/mod/sumdb/note``, byte for byte, so that
Go's tools and wgtpm can verify each other's notes.

Keys. A *verifier key* (public) is ``<name>+<hash>+<keydata>``; a *signer
key* (secret) is ``PRIVATE+KEY+<name>+<hash>+<keydata>``:

- ``name`` is the server's name, usually ``host[/path]`` of its log; it is
  non-empty UTF-8 without spaces or ``+``;
- ``keydata`` is standard base64 of one algorithm byte (``1``: Ed25519, the
  only one) followed by the 32-byte Ed25519 public key (verifier) or seed
  (signer);
- ``hash`` is 8 hex digits: the first four bytes, big-endian, of
  ``sha256(name + "\\n" + algorithm byte + public key)``.

Notes. A signed note is the text (which ends in a newline), a blank line,
then one line per signature: an em dash (U+2014), a space, the key's name, a
space, and base64 of the 4-byte key hash followed by the Ed25519 signature of
the text (the text with its final newline, without the blank line). A note
is valid UTF-8 with no control character other than newline. For example::

    If you think cryptography is the answer to your problem,
    then you don't know what your problem is.

    — PeterNeumann x08go/ZJkuBS9UG/SffcvIAQxVBtiFupLLr8pAcElZInNIuGUgYN1FFYC2pZSNXgKvqfqdngotpRZb6KE6RyyBwJnAM=

is signed by ``PRIVATE+KEY+PeterNeumann+c74f20a3+AYEKFALVFGyNhPJEMzD1QIDr+Y7hfZx09iUvxdXHKDFz``
and verifies with ``PeterNeumann+c74f20a3+ARpc2QcUPDhMQegwxbzhKqiBfsVkmqq/LDE4izWy10TW``.
Ed25519 is deterministic: signing the same text with the same key always
gives the same note.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import NamedTuple, Protocol

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

from .._errors import SumdbError

__all__ = [
    "MAX_SIGNATURES",
    "AmbiguousVerifierError",
    "InvalidKeyError",
    "InvalidSignatureError",
    "InvalidSignerError",
    "MalformedNoteError",
    "MismatchedVerifierError",
    "Note",
    "NoteError",
    "Signature",
    "Signer",
    "UnknownVerifierError",
    "UnverifiedNoteError",
    "Verifier",
    "VerifierList",
    "Verifiers",
    "generate_key",
    "key_hash",
    "new_ed25519_verifier_key",
    "new_signer",
    "new_verifier",
    "open",
    "sign",
]

ALG_ED25519 = 1  # the algorithm byte of an Ed25519 key
MAX_SIGNATURES = 100  # a note with more signature lines is malformed (bounds the work of open)

_SIG_PREFIX = "— ".encode()
_HEX8 = re.compile(r"[0-9a-fA-F]{8}")


class NoteError(SumdbError):
    """A key or signed note that is malformed or does not verify."""


class InvalidKeyError(NoteError):
    """A verifier or signer key string that is malformed, of an unknown algorithm or a wrong hash."""


class MalformedNoteError(NoteError):
    """A signed note that breaks the format (no blank line, a bad signature line, a control byte)."""

    def __init__(self) -> None:
        super().__init__("malformed note")


class InvalidSignerError(NoteError):
    """A signer whose name is not a valid key name."""

    def __init__(self) -> None:
        super().__init__("invalid signer")


class UnknownVerifierError(NoteError):
    """No known verifier has this name and key hash (``open`` records such signatures as unverified)."""

    def __init__(self, name: str, hash: int) -> None:
        self.name = name
        self.hash = hash
        super().__init__(f"unknown key {name}+{hash:08x}")


class AmbiguousVerifierError(NoteError):
    """More than one known verifier has this name and key hash: the verifier list is corrupt."""

    def __init__(self, name: str, hash: int) -> None:
        self.name = name
        self.hash = hash
        super().__init__(f"ambiguous key {name}+{hash:08x}")


class MismatchedVerifierError(NoteError):
    """A :class:`Verifiers` returned a verifier for another name or key hash than was asked."""

    def __init__(self) -> None:
        super().__init__("verifier name or hash doesn't match signature")


class InvalidSignatureError(NoteError):
    """A known key's signature on the note does not verify: the note was altered or forged."""

    def __init__(self, name: str, hash: int) -> None:
        self.name = name
        self.hash = hash
        super().__init__(f"invalid signature for key {name}+{hash:08x}")


class UnverifiedNoteError(NoteError):
    """The note parsed, but no known key signed it; ``note`` holds it, all signatures unverified."""

    def __init__(self, note: Note) -> None:
        self.note = note
        super().__init__("note has no verifiable signatures")


class Verifier(Protocol):
    """Verifies signatures by one key."""

    @property
    def name(self) -> str: ...
    @property
    def key_hash(self) -> int: ...
    def verify(self, msg: bytes, sig: bytes) -> bool: ...


class Signer(Protocol):
    """Signs with one key."""

    @property
    def name(self) -> str: ...
    @property
    def key_hash(self) -> int: ...
    def sign(self, msg: bytes) -> bytes: ...


class Verifiers(Protocol):
    """Finds the verifier for a name and key hash, or raises :class:`UnknownVerifierError`."""

    def verifier(self, name: str, hash: int) -> Verifier: ...


class Signature(NamedTuple):
    """One signature line of a note: the key's name and hash, and the base64 as written."""

    name: str
    hash: int
    base64: str


@dataclass
class Note:
    """A text (ending in a newline) with its verified and unverified signatures."""

    text: str
    sigs: list[Signature] = field(default_factory=list)
    unverified_sigs: list[Signature] = field(default_factory=list)


def key_hash(name: str, key: bytes) -> int:
    """The 32-bit key hash: the first four bytes of ``sha256(name + "\\n" + key)``, big-endian.

    ``key`` is the algorithm byte followed by the public key.
    """
    return int.from_bytes(hashlib.sha256(name.encode() + b"\n" + key).digest()[:4], "big")


def _is_valid_name(name: str) -> bool:
    return bool(name) and "+" not in name and not any(c.isspace() for c in name)


def _b64decode(s: str) -> bytes | None:
    try:
        return base64.b64decode(s.encode("ascii"), validate=True)
    except (binascii.Error, UnicodeEncodeError):
        return None


def _split_key(key: str, fields: int) -> list[str] | None:
    parts = key.split("+", fields - 1)
    return parts if len(parts) == fields else None


def _parse_key(name: str, hash16: str, key64: str) -> tuple[int, bytes]:
    """The key hash and the key bytes after the algorithm byte, checked for form and algorithm."""
    key = _b64decode(key64)
    if not _HEX8.fullmatch(hash16) or key is None or not _is_valid_name(name) or not key:
        raise InvalidKeyError("malformed verifier id")
    if key[0] != ALG_ED25519:
        raise InvalidKeyError("unknown verifier algorithm")
    if len(key) != 1 + 32:
        raise InvalidKeyError("malformed verifier id")
    return int(hash16, 16), key[1:]


@dataclass(frozen=True)
class _Ed25519Verifier:
    name: str
    key_hash: int
    public: Ed25519PublicKey

    def verify(self, msg: bytes, sig: bytes) -> bool:
        try:
            self.public.verify(sig, msg)
        except (InvalidSignature, ValueError):
            return False
        return True


@dataclass(frozen=True)
class _Ed25519Signer:
    name: str
    key_hash: int
    private: Ed25519PrivateKey

    def sign(self, msg: bytes) -> bytes:
        return self.private.sign(msg)


def new_verifier(vkey: str) -> Verifier:
    """The verifier for a key ``name+hash+base64``; raises :class:`InvalidKeyError`."""
    parts = _split_key(vkey, 3)
    if parts is None:
        raise InvalidKeyError("malformed verifier id")
    name, hash16, key64 = parts
    hash, key = _parse_key(name, hash16, key64)
    if hash != key_hash(name, bytes([ALG_ED25519]) + key):
        raise InvalidKeyError("invalid verifier hash")
    try:
        public = Ed25519PublicKey.from_public_bytes(key)
    except ValueError as exc:
        raise InvalidKeyError("malformed verifier id") from exc
    return _Ed25519Verifier(name, hash, public)


def new_signer(skey: str) -> Signer:
    """The signer for a key ``PRIVATE+KEY+name+hash+base64``; raises :class:`InvalidKeyError`."""
    parts = _split_key(skey, 5)
    if parts is None or parts[0] != "PRIVATE" or parts[1] != "KEY":
        raise InvalidKeyError("malformed signer id")
    _, _, name, hash16, key64 = parts
    hash, seed = _parse_key(name, hash16, key64)
    private = Ed25519PrivateKey.from_private_bytes(seed)
    # The hash names the public key, so it can be checked only after deriving that key.
    if hash != key_hash(name, bytes([ALG_ED25519]) + private.public_key().public_bytes_raw()):
        raise InvalidKeyError("invalid signer hash")
    return _Ed25519Signer(name, hash, private)


def new_ed25519_verifier_key(name: str, public: bytes) -> str:
    """The verifier key string for a raw 32-byte Ed25519 public key."""
    if len(public) != 32:
        raise InvalidKeyError(f"invalid public key size {len(public)}, expected 32")
    if not _is_valid_name(name):
        raise InvalidKeyError(f"invalid key name {name!r}")
    key = bytes([ALG_ED25519]) + public
    return f"{name}+{key_hash(name, key):08x}+{base64.b64encode(key).decode()}"


def generate_key(name: str) -> tuple[str, str]:
    """A new random key pair for the server ``name``: ``(signer key, verifier key)``.

    The signer key is secret; the verifier key is what clients configure.
    """
    private = Ed25519PrivateKey.generate()
    seed = private.private_bytes_raw()
    vkey = new_ed25519_verifier_key(name, private.public_key().public_bytes_raw())
    hash16 = vkey.split("+")[1]
    skey = f"PRIVATE+KEY+{name}+{hash16}+{base64.b64encode(bytes([ALG_ED25519]) + seed).decode()}"
    return skey, vkey


class VerifierList:
    """The :class:`Verifiers` of a fixed list of keys."""

    def __init__(self, *verifiers: Verifier) -> None:
        self._by_key: dict[tuple[str, int], list[Verifier]] = {}
        for v in verifiers:
            self._by_key.setdefault((v.name, v.key_hash), []).append(v)

    def verifier(self, name: str, hash: int) -> Verifier:
        found = self._by_key.get((name, hash))
        if not found:
            raise UnknownVerifierError(name, hash)
        if len(found) > 1:
            raise AmbiguousVerifierError(name, hash)
        return found[0]


def _check_note_bytes(msg: bytes) -> None:
    try:
        text = msg.decode("utf-8")
    except UnicodeDecodeError:
        raise MalformedNoteError() from None
    if any(c < " " and c != "\n" for c in text):
        raise MalformedNoteError()


def _parse_signature_line(line: bytes) -> tuple[Signature, bytes]:
    """The signature a line ``— name base64`` holds, and the raw signature after the key hash."""
    if not line.startswith(_SIG_PREFIX):
        raise MalformedNoteError()
    name, _, b64 = line[len(_SIG_PREFIX) :].decode().partition(" ")
    raw = _b64decode(b64)
    if raw is None or not _is_valid_name(name) or not b64 or len(raw) < 5:
        raise MalformedNoteError()
    return Signature(name, int.from_bytes(raw[:4], "big"), b64), raw[4:]


def open(msg: bytes, known: Verifiers) -> Note:
    """Parse a signed note and verify its signatures against the ``known`` keys.

    Signatures by known keys that verify go to ``sigs``; those by unknown keys
    to ``unverified_sigs`` (repeated lines are kept once). A known key whose
    signature fails raises :class:`InvalidSignatureError`; a note with no
    verified signature raises :class:`UnverifiedNoteError` holding the note;
    a note that breaks the format raises :class:`MalformedNoteError`.
    """
    _check_note_bytes(msg)
    split = msg.rfind(b"\n\n")
    if split < 0:
        raise MalformedNoteError()
    text, sigs = msg[: split + 1], msg[split + 2 :]
    if not sigs.endswith(b"\n"):
        raise MalformedNoteError()

    note = Note(text.decode())
    seen: set[tuple[str, int]] = set()
    seen_unverified: set[bytes] = set()
    for count, line in enumerate(sigs[:-1].split(b"\n"), 1):
        sig, raw = _parse_signature_line(line)
        if count > MAX_SIGNATURES:
            raise MalformedNoteError()
        try:
            verifier = known.verifier(sig.name, sig.hash)
        except UnknownVerifierError:
            if line not in seen_unverified:
                seen_unverified.add(line)
                note.unverified_sigs.append(sig)
            continue
        if verifier.name != sig.name or verifier.key_hash != sig.hash:
            raise MismatchedVerifierError()
        if (sig.name, sig.hash) in seen:
            continue
        seen.add((sig.name, sig.hash))
        if not verifier.verify(text, raw):
            raise InvalidSignatureError(sig.name, sig.hash)
        note.sigs.append(sig)

    if not note.sigs:
        raise UnverifiedNoteError(note)
    return note


def _signature_line(name: str, b64: str) -> bytes:
    return _SIG_PREFIX + f"{name} {b64}\n".encode()


def sign(note: Note | str, signers: Iterable[Signer]) -> bytes:
    """The signed note: the text, a blank line, then the existing and the new signatures.

    An existing signature by the key of one of ``signers`` is replaced by the
    new one; the others are kept, new signatures coming last.
    """
    if isinstance(note, str):
        note = Note(note)
    if not note.text.endswith("\n"):
        raise MalformedNoteError()
    text = note.text.encode()

    new: list[bytes] = []
    have: set[tuple[str, int]] = set()
    for signer in signers:
        name, hash = signer.name, signer.key_hash
        have.add((name, hash))
        if not _is_valid_name(name):
            raise InvalidSignerError()
        signed = hash.to_bytes(4, "big") + signer.sign(text)
        new.append(_signature_line(name, base64.b64encode(signed).decode()))

    old: list[bytes] = []
    for sig in [*note.sigs, *note.unverified_sigs]:
        if not _is_valid_name(sig.name):
            raise MalformedNoteError()
        if (sig.name, sig.hash) in have:
            continue
        raw = _b64decode(sig.base64)
        if raw is None or len(raw) < 4 or int.from_bytes(raw[:4], "big") != sig.hash:
            raise MalformedNoteError()
        old.append(_signature_line(sig.name, sig.base64))

    return text + b"\n" + b"".join(old) + b"".join(new)
