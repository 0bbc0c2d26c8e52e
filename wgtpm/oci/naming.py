"""Module paths and versions as OCI repository names and tags (docs/guides/oci.md).

An OCI repository name is ``/``-separated components, each lower-case
letters and digits joined by one ``.``, one ``_``, ``__`` or a run of ``-``
(``[a-z0-9]+(?:(?:[._]|__|[-]+)[a-z0-9]+)*``). A module path element may also
hold capitals, ``~`` and separators the grammar refuses (``a..b``, ``-x``,
``a_``). The mapping is one way and one to one:

* an element that is lower-case letters and digits joined by single ``.``,
  ``_`` or ``-`` is itself (``example.com``, ``xor-base``, ``v2``);
* any other element becomes ``x`` followed by its characters, where a
  letter or digit stands for itself, a capital ``A`` is ``__a`` and any
  other character is ``--`` and its two lower-case hex digits
  (``Acme`` -> ``x__acme``, ``a~b`` -> ``xa--7eb``, ``_x`` -> ``x--5fx``).

An element of the first kind never holds ``__`` or ``--``; one of the second
always does, so no two module paths share a repository. The repository of a
module is ``NAMESPACE/`` then its mapped elements.

A tag is the version with ``+`` (build metadata, which a tag may not hold) as
``_`` (which a semantic version may not hold): ``v1.2.3+meta`` -> ``v1.2.3_meta``.
"""

from __future__ import annotations

import re

from .._errors import UsageError

__all__ = [
    "MAX_NAME",
    "check_namespace",
    "repository",
    "repository_element",
    "tag_of",
    "version_of_tag",
]

#: The longest repository name the distribution registry accepts.
MAX_NAME = 255
_COMPONENT = re.compile(r"[a-z0-9]+(?:(?:[._]|__|[-]+)[a-z0-9]+)*")
_PLAIN = re.compile(r"[a-z0-9]+(?:[._-][a-z0-9]+)*")
_TAG = re.compile(r"[A-Za-z0-9_][A-Za-z0-9._-]{0,127}")
_ALNUM = frozenset("abcdefghijklmnopqrstuvwxyz0123456789")


def repository_element(elem: str) -> str:
    """One module path element as one repository name component (see the module docstring)."""
    if _PLAIN.fullmatch(elem):
        return elem
    out = ["x"]
    for ch in elem:
        if ch in _ALNUM:
            out.append(ch)
        elif "A" <= ch <= "Z":
            out.append("__" + ch.lower())
        else:
            out.append(f"--{ord(ch):02x}")
    return "".join(out)


def check_namespace(namespace: str, where: str) -> str:
    """``namespace`` (``""`` or components of the grammar) without surrounding slashes;
    :class:`UsageError` naming ``where`` (the ``oci://`` URL) otherwise."""
    ns = namespace.strip("/")
    if ns and not all(_COMPONENT.fullmatch(c) for c in ns.split("/")):
        raise UsageError(
            f"{where}: namespace {ns!r} is not an OCI repository name (lower-case letters "
            "and digits joined by '.', '_', '__' or '-', components separated by '/')"
        )
    return ns


def repository(namespace: str, module: str) -> str:
    """The repository of ``module`` within ``namespace`` (checked by :func:`check_namespace`)."""
    elems = [repository_element(e) for e in module.split("/")]
    name = "/".join(([namespace] if namespace else []) + elems)
    if len(name) > MAX_NAME:
        raise UsageError(
            f"{module}: its OCI repository name {name[:60]}... is {len(name)} characters, "
            f"longer than the {MAX_NAME} registries accept; use a shorter namespace or path"
        )
    return name


def tag_of(version: str) -> str:
    """The tag of ``version`` (``+`` as ``_``)."""
    tag = version.replace("+", "_")
    if not _TAG.fullmatch(tag):
        raise UsageError(f"version {version[:80]!r} cannot be an OCI tag (at most 128 characters)")
    return tag


def version_of_tag(tag: str) -> str:
    """The version a tag stands for (the inverse of :func:`tag_of`); the caller checks
    that it is a valid semantic version."""
    return tag.replace("_", "+")
