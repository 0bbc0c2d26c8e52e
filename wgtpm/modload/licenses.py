"""The licenses of the build list: what each module declares, and the main module's deny list.

A module's license is, in order (docs/design.md section 13):

1. the ``license`` line of its wgt.mod, which wgt.sum locks like the rest of it;
2. else the ``license`` field of its model card, the front matter of its
   ``README.md`` (a Hugging Face repository has no wgt.mod), read from the
   verified file in the module cache, never from an API's answer;
3. else none, which ``deny-license NOASSERTION`` refuses.

The main module's ``deny-license`` lines refuse a dependency whose license
takes a denied one on every choice (:func:`wgtpm.spdx.refused`); like
``exclude``, only the main module's lines count. The check runs before any
module's files are downloaded (a card is one small file), and a refusal is a
:class:`~wgtpm._errors.ModuleError` before wgt.mod and wgt.sum are written::

    wgtpm: hf.co/acme/tiny@v0.1.0: its license GPL-3.0-only (README.md) is denied by
    wgt.mod:7:14 (deny-license GPL-3.0-only); exclude it or change deny-license
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from .. import spdx
from .._errors import ModuleError
from ..module import ModuleVersion
from .buildlist import Fetched, FromDirectory

if TYPE_CHECKING:
    from .project import Project

__all__ = ["MAX_CARD_BYTES", "ModuleLicense", "check_denied", "license_of"]

MV = ModuleVersion
#: A README.md larger than this is not downloaded for its license: the front matter is
#: at its top, and a license check must not fetch a large file the user did not select.
MAX_CARD_BYTES = 1 << 20


@dataclass(frozen=True)
class ModuleLicense:
    """A module's declared license: ``expression`` as written, ``parsed`` its SPDX tree
    (``None`` for a card whose text is not an SPDX expression), ``source`` the file it is
    from (``wgt.mod`` or ``README.md``)."""

    expression: str
    parsed: spdx.Expression | None
    source: str


def license_of(project: Project, m: MV, fetch: bool = True) -> ModuleLicense | None:
    """The license ``m`` declares (see the module docstring), or ``None``.

    With ``fetch`` false nothing is downloaded: a card is read only when its
    file is already in the module cache (``wgtpm list``).
    """
    mf = project.reqs.mod_of(m)
    if mf.license is not None:
        return ModuleLicense(mf.license.expression, mf.license.parsed, "wgt.mod")
    card = _card(project, m, fetch)
    if card is None:
        return None
    from ..sources.huggingface import CARD, card_license

    text = card_license(card)
    if text is None:
        return None
    try:
        parsed: spdx.Expression | None = spdx.parse(text)
    except spdx.SpdxError:
        parsed = None  # shown as written; counts as no assertion for deny-license
    return ModuleLicense(text, parsed, CARD)


def _card(project: Project, m: MV, fetch: bool) -> bytes | None:
    """The verified bytes (their head) of ``m``'s README.md, or ``None``."""
    from ..sources.huggingface import CARD, MAX_CARD_HEADER

    if m.version == "":
        where: Path | None = project.root
    else:
        origin = project.origin(m)
        if isinstance(origin, FromDirectory):
            where = origin.dir
        elif not fetch:
            where = project.placed_dir(m)
        else:
            assert isinstance(origin, Fetched)
            entry = next((e for e in project.index(origin).files if e.path == CARD), None)
            if entry is None or entry.size > MAX_CARD_BYTES:
                return None
            where = project.fetcher().download(origin.path, origin.version, [CARD])
    if where is None:
        return None
    try:
        with open(where / CARD, "rb") as f:
            return f.read(MAX_CARD_HEADER)
    except (FileNotFoundError, NotADirectoryError, IsADirectoryError):
        return None


def check_denied(project: Project, build: list[MV]) -> None:
    """Refuse the first module of ``build`` whose license the main module denies."""
    main = project.reqs.mod_of(project.main)
    if not main.deny_licenses:
        return
    for m in build[1:]:
        lic = license_of(project, m)
        hit = main.denied(lic.parsed if lic else None)
        if hit is None:
            continue
        what = (
            f"its license {lic.expression} ({lic.source})"
            if lic
            else "it declares no license (NOASSERTION)"
        )
        raise ModuleError(
            m.path,
            m.version,
            f"{what} is denied by {hit.pos} (deny-license {hit.license}); "
            "exclude it or change deny-license",
        )
