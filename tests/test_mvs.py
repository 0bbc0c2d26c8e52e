"""Minimal version selection against the behaviour cases of Go's MVS tests.

The cases live in testdata/mvs.txt; each ``name:`` section is one test.
Modules are one capital letter and versions what follows it (``B1``,
``B5.hidden``, ``Anone``), compared as strings as Go's test does.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from wgtpm import mvs
from wgtpm._errors import ResolveError, WgtpmError
from wgtpm.module import ModuleVersion as MV

CASES = (Path(__file__).parent / "testdata" / "mvs.txt").read_text()


class ReqsMap:
    def __init__(self) -> None:
        self.reqs: dict[MV, list[MV]] = {}

    def max(self, path: str, v1: str, v2: str) -> str:
        if v1 == "none" or v2 == "":
            return v2
        if v2 == "none" or v1 == "":
            return v1
        return v2 if v1 < v2 else v1

    def required(self, m: MV) -> list[MV]:
        if m not in self.reqs:
            raise WgtpmError(f"missing module: {m}")
        return self.reqs[m]

    def upgrade(self, m: MV) -> MV:
        u = MV(m.path, "none")
        for k in self.reqs:
            if (
                k.path == m.path
                and self.max(k.path, u.version, k.version) == k.version
                and not k.version.endswith(".hidden")
            ):
                u = k
        return u

    def previous(self, m: MV) -> MV:
        p = MV(m.path, "")
        for k in self.reqs:
            if (
                k.path == m.path
                and p.version < k.version < m.version
                and not k.version.endswith(".hidden")
            ):
                p = k
        return p if p.version else MV(m.path, "none")


def m(s: str) -> MV:
    return MV(s[:1], s[1:])


def sections() -> list[tuple[str, ReqsMap, list[tuple[str, list[str], str]]]]:
    out = []
    for line in CASES.splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        key, val = (s.strip() for s in line.split(":", 1))
        kf = key.split()
        if kf[0] == "name":
            out.append((val, ReqsMap(), []))
        elif kf[0] in ("build", "upgrade*", "upgrade", "upgradereq", "downgrade", "req"):
            out[-1][2].append((kf[0], kf[1:], val))
        else:
            rm = out[-1][1]
            rs = [m(f) for f in val.split()]
            for r in rs:
                rm.reqs.setdefault(r, [])
            rm.reqs[m(key)] = rs
    return out


SECTIONS = sections()


@pytest.mark.parametrize("name,reqs,ops", SECTIONS, ids=[s[0] for s in SECTIONS])
def test_mvs(name: str, reqs: ReqsMap, ops: list[tuple[str, list[str], str]]) -> None:
    assert ops, "no operation tested"
    for op, args, want in ops:
        t = m(args[0])
        if op == "build":
            got = mvs.build_list([t], reqs)
        elif op == "upgrade*":
            got = mvs.upgrade_all(t, reqs)
        elif op == "upgrade":
            got = mvs.upgrade(t, reqs, *map(m, args[1:]))
        elif op == "upgradereq":
            up = mvs.upgrade(t, reqs, *map(m, args[1:]))
            r2 = ReqsMap()
            r2.reqs = dict(reqs.reqs)
            r2.reqs[t] = up
            got = mvs.req(t, [], r2)
        elif op == "downgrade":
            got = mvs.downgrade(t, reqs, *map(m, args[1:]))
        else:
            got = mvs.req(t, args[1:], reqs)
        assert got == [m(s) for s in want.split()], f"{op} {' '.join(args)}"


def test_error_names_requirement_path() -> None:
    r = ReqsMap()
    r.reqs = {m("A"): [m("B1")], m("B1"): [m("C1")], m("C1"): [m("D1")]}
    with pytest.raises(ResolveError) as ei:
        mvs.build_list([m("A")], r)
    assert ei.value.chain == ["A", "B@1", "C@1", "D@1"]
    assert "missing module: D@1" in str(ei.value)
    assert "requires B@1" in str(ei.value)


def test_parallel_matches_serial() -> None:
    for name, reqs, ops in SECTIONS:
        for op, args, _ in ops:
            if op == "build":
                t = m(args[0])
                assert mvs.build_list([t], reqs, workers=4) == mvs.build_list([t], reqs), name
