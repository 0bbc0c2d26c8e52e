"""Go's note_test.go vectors: the same keys sign and verify byte for byte."""

from __future__ import annotations

import pytest

from wgtpm.sumdb import note
from wgtpm.sumdb.note import Note, Signature

PETER_VKEY = "PeterNeumann+c74f20a3+ARpc2QcUPDhMQegwxbzhKqiBfsVkmqq/LDE4izWy10TW"
PETER_SKEY = "PRIVATE+KEY+PeterNeumann+c74f20a3+AYEKFALVFGyNhPJEMzD1QIDr+Y7hfZx09iUvxdXHKDFz"
ENOCH_VKEY = "EnochRoot+af0cfe78+ATtqJ7zOtqQtYqOo0CpvDXNlMhV3HeJDpjrASKGLWdop"
TEXT = (
    "If you think cryptography is the answer to your problem,\n"
    "then you don't know what your problem is.\n"
)
PETER_B64 = (
    "x08go/ZJkuBS9UG/SffcvIAQxVBtiFupLLr8pAcElZInNIuGUgYN1FFYC2pZSNXgKvqfqdngotpRZb6KE6RyyBwJnAM="
)
ENOCH_B64 = (
    "rwz+eBzmZa0SO3NbfRGzPCpDckykFXSdeX+MNtCOXm2/5n2tiOHp+vAF1aGrQ5ovTG01oOTGwnWLox33WWd1RvMc+QQ="
)
PETER_SIG = f"— PeterNeumann {PETER_B64}\n"
ENOCH_SIG = f"— EnochRoot {ENOCH_B64}\n"
PETER = Signature("PeterNeumann", 0xC74F20A3, PETER_B64)
ENOCH = Signature("EnochRoot", 0xAF0CFE78, ENOCH_B64)


def _manglings(key: str) -> list[str]:
    """Every proper substring of key, and key with each byte incremented (as Go's tests do)."""
    b = key.encode()
    out = [b[i:j] for i in range(len(b) + 1) for j in range(i + 1, len(b) + 1)]
    out = [s for s in out if s != b]
    out += [b[:i] + bytes([b[i] + 1]) + b[i + 1 :] for i in range(len(b))]
    return [s.decode("utf-8", "replace") for s in out]


def test_new_verifier_accepts_the_key_and_no_mangling() -> None:
    v = note.new_verifier(PETER_VKEY)
    assert (v.name, v.key_hash) == ("PeterNeumann", 0xC74F20A3)
    bad = [
        *_manglings(PETER_VKEY),
        # wrong length key, with adjusted key hash
        "PeterNeumann+cc469956+ARpc2QcUPDhMQegwxbzhKqiBfsVkmqq/LDE4izWy10TWBADKEY==",
        # unknown algorithm, with adjusted key hash
        "PeterNeumann+173116ae+ZRpc2QcUPDhMQegwxbzhKqiBfsVkmqq/LDE4izWy10TW",
    ]
    for k in bad:
        with pytest.raises(note.InvalidKeyError):
            note.new_verifier(k)


def test_new_signer_accepts_the_key_and_no_mangling() -> None:
    s = note.new_signer(PETER_SKEY)
    assert (s.name, s.key_hash) == ("PeterNeumann", 0xC74F20A3)
    for k in _manglings(PETER_SKEY):
        with pytest.raises(note.InvalidKeyError):
            note.new_signer(k)


def _check_pair(name: str, signer: note.Signer, verifier: note.Verifier) -> None:
    assert signer.name == verifier.name == name
    assert signer.key_hash == verifier.key_hash
    sig = signer.sign(b"hi")
    assert verifier.verify(b"hi", sig)
    assert not verifier.verify(b"hi", bytes([sig[0] + 1 & 0xFF]) + sig[1:])
    assert not verifier.verify(b"ii", sig)
    assert not verifier.verify(b"hi", sig[:-1])


def test_generate_key() -> None:
    skey, vkey = note.generate_key("EnochRoot")
    assert skey.startswith("PRIVATE+KEY+EnochRoot+")
    _check_pair("EnochRoot", note.new_signer(skey), note.new_verifier(vkey))


def test_ed25519_verifier_key() -> None:
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    priv = Ed25519PrivateKey.generate()
    pub = priv.public_key().public_bytes_raw()
    vkey = note.new_ed25519_verifier_key("EnochRoot", pub)
    v = note.new_verifier(vkey)
    assert v.verify(b"hi", priv.sign(b"hi"))
    with pytest.raises(note.InvalidKeyError):
        note.new_ed25519_verifier_key("EnochRoot", pub[:-1])
    # Peter's public key, from his verifier key, gives his verifier key back.
    assert note.new_ed25519_verifier_key("PeterNeumann", note_public(PETER_VKEY)) == PETER_VKEY


def note_public(vkey: str) -> bytes:
    import base64

    return base64.b64decode(vkey.split("+")[2])[1:]


def test_sign_is_byte_for_byte_gos() -> None:
    signer = note.new_signer(PETER_SKEY)
    want = (TEXT + "\n" + PETER_SIG).encode()
    assert note.sign(Note(TEXT), [signer]) == want
    assert note.sign(TEXT, [signer]) == want
    # An existing signature by the same key is replaced by the new one.
    old = Signature("PeterNeumann", 0xC74F20A3, "BADSIGN=")
    assert note.sign(Note(TEXT, sigs=[old]), [signer]) == want


def test_sign_keeps_other_signatures_first() -> None:
    signer = note.new_signer(PETER_SKEY)
    got = note.sign(Note(TEXT, unverified_sigs=[ENOCH]), [signer])
    assert got == (TEXT + "\n" + ENOCH_SIG + PETER_SIG).encode()


class _BadName:
    name = "bad name"
    key_hash = 1

    def sign(self, msg: bytes) -> bytes:
        return b"x"


class _Surprise(Exception):
    pass


class _Failing:
    name = "PeterNeumann"
    key_hash = 0xC74F20A3

    def sign(self, msg: bytes) -> bytes:
        raise _Surprise


@pytest.mark.parametrize(
    ("n", "signers", "error"),
    [
        (Note("abc"), "peter", note.MalformedNoteError),
        (Note(TEXT, sigs=[Signature("a+b", 0, "ABCD")]), "", note.MalformedNoteError),
        (
            Note(TEXT, sigs=[Signature("PeterNeumann", 0xC74F20A3, "BADHASH=")]),
            "",
            note.MalformedNoteError,
        ),
        (Note(TEXT), "badname", note.InvalidSignerError),
        (Note(TEXT), "failing", _Surprise),
    ],
)
def test_sign_refuses(n: Note, signers: str, error: type[Exception]) -> None:
    table: dict[str, list[note.Signer]] = {
        "": [],
        "peter": [note.new_signer(PETER_SKEY)],
        "badname": [_BadName()],
        "failing": [_Failing()],
    }
    with pytest.raises(error):
        note.sign(n, table[signers])


def test_verifier_list() -> None:
    peter = note.new_verifier(PETER_VKEY)
    enoch = note.new_verifier(ENOCH_VKEY)
    known = note.VerifierList(peter, enoch, enoch)
    assert known.verifier("PeterNeumann", 0xC74F20A3) is peter
    for name, h, msg in [
        ("PeterNeumann", 0xC74F20A4, "unknown key PeterNeumann+c74f20a4"),
        ("PeterNeuman", 0xC74F20A3, "unknown key PeterNeuman+c74f20a3"),
        ("EnochRoot", 0xAF0CFE78, "ambiguous key EnochRoot+af0cfe78"),
    ]:
        with pytest.raises(note.NoteError, match=msg.replace("+", r"\+")):
            known.verifier(name, h)


def _msg(*sigs: str) -> bytes:
    return (TEXT + "\n" + "".join(sigs)).encode()


def _insert_abcd(sig: str) -> str:
    """sig with ABCD inserted at byte 60, as Go's test slices it (the em dash is 3 bytes)."""
    b = sig.encode()
    return (b[:60] + b"ABCD" + b[60:]).decode()


def test_open_one_verified_one_not() -> None:
    n = note.open(_msg(PETER_SIG, ENOCH_SIG), note.VerifierList(note.new_verifier(PETER_VKEY)))
    assert n == Note(TEXT, [PETER], [ENOCH])


def test_open_both_verified() -> None:
    known = note.VerifierList(note.new_verifier(PETER_VKEY), note.new_verifier(ENOCH_VKEY))
    assert note.open(_msg(PETER_SIG, ENOCH_SIG), known) == Note(TEXT, [PETER, ENOCH], [])


def test_open_unverified_carries_the_note() -> None:
    with pytest.raises(note.UnverifiedNoteError, match="note has no verifiable signatures") as e:
        note.open(_msg(PETER_SIG, ENOCH_SIG), note.VerifierList())
    assert e.value.note == Note(TEXT, [], [PETER, ENOCH])


def test_open_duplicated_verifier() -> None:
    peter, enoch = note.new_verifier(PETER_VKEY), note.new_verifier(ENOCH_VKEY)
    known = note.VerifierList(enoch, peter, enoch)
    with pytest.raises(note.AmbiguousVerifierError, match=r"ambiguous key EnochRoot\+af0cfe78"):
        note.open(_msg(ENOCH_SIG), known)
    assert note.open(_msg(PETER_SIG), known).sigs == [PETER]  # the duplicate is unused


def test_open_too_many_signatures() -> None:
    for known in (note.VerifierList(note.new_verifier(PETER_VKEY)), note.VerifierList()):
        with pytest.raises(note.MalformedNoteError):
            note.open(_msg(PETER_SIG * 101), known)


def test_open_invalid_signature() -> None:
    bad = _insert_abcd(PETER_SIG)
    known = note.VerifierList(note.new_verifier(PETER_VKEY))
    with pytest.raises(
        note.InvalidSignatureError, match=r"invalid signature for key PeterNeumann\+c74f20a3"
    ):
        note.open(_msg(bad), known)


def test_open_drops_repeated_signatures() -> None:
    enoch_abcd = _insert_abcd(ENOCH_SIG)
    n = note.open(
        _msg(PETER_SIG, PETER_SIG, ENOCH_SIG, ENOCH_SIG, enoch_abcd),
        note.VerifierList(note.new_verifier(PETER_VKEY)),
    )
    abcd = Signature(
        "EnochRoot",
        0xAF0CFE78,
        "rwz+eBzmZa0SO3NbfRGzPCpDckykFXSdeX+MNtCOXm2/5n"
        + "ABCD"
        + "2tiOHp+vAF1aGrQ5ovTG01oOTGwnWLox33WWd1RvMc+QQ=",
    )
    assert n == Note(TEXT, [PETER], [ENOCH, abcd])


@pytest.mark.parametrize(
    "msg",
    [
        TEXT.encode(),
        (TEXT + "\n").encode(),
        (TEXT + "\n" + PETER_SIG[:-1]).encode(),
        ("\x01" + TEXT + "\n" + PETER_SIG).encode(),
        b"\xff" + (TEXT + "\n" + PETER_SIG).encode(),
        (TEXT + "\n" + "— Bad Name " + PETER_B64).encode(),
        (TEXT + "\n" + PETER_SIG + "Unexpected line.\n").encode(),
    ],
)
def test_open_malformed(msg: bytes) -> None:
    with pytest.raises(note.MalformedNoteError, match="malformed note"):
        note.open(msg, note.VerifierList(note.new_verifier(PETER_VKEY)))


class _Fixed:
    def __init__(self, v: note.Verifier) -> None:
        self.v = v

    def verifier(self, name: str, hash: int) -> note.Verifier:
        return self.v


def test_open_wrong_verifier_returned() -> None:
    fixed = _Fixed(note.new_verifier(PETER_VKEY))
    for sig in (
        PETER_SIG.replace("PeterNeumann", "CarmenSandiego"),
        PETER_SIG.replace("x08g", "xxxx"),
    ):
        with pytest.raises(note.MismatchedVerifierError):
            note.open(_msg(sig), fixed)


def test_open_then_sign_adds_a_second_signature() -> None:
    peter = note.new_verifier(PETER_VKEY)
    n = note.open(_msg(PETER_SIG), note.VerifierList(peter))
    skey, vkey = note.generate_key("EnochRoot")
    twice = note.sign(n, [note.new_signer(skey)])
    assert twice.startswith(_msg(PETER_SIG))
    n2 = note.open(twice, note.VerifierList(peter, note.new_verifier(vkey)))
    assert [s.name for s in n2.sigs] == ["PeterNeumann", "EnochRoot"]
