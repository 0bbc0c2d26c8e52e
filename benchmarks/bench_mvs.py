"""MVS on a synthetic graph of 10,000 modules x 10 versions (target: well under a second).

The peer is a bare breadth-first walk over the same graph with no version
comparison at all: the least any graph algorithm must do.
"""

from __future__ import annotations

import random
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks._common import best_of, report
from wgtpm import mvs
from wgtpm import version as v
from wgtpm.module import ModuleVersion as MV

N, VERSIONS, FANOUT = 10_000, 10, 4


def graph() -> dict[MV, list[MV]]:
    rnd = random.Random(1)
    g: dict[MV, list[MV]] = {}
    paths = [f"example.com/m{i:05d}" for i in range(N)]
    for i, p in enumerate(paths):
        for k in range(VERSIONS):
            deps = []
            if i + 1 < N:
                for j in rnd.sample(range(i + 1, min(N, i + 200)), min(FANOUT, N - i - 1)):
                    deps.append(MV(paths[j], f"v1.{rnd.randrange(VERSIONS)}.0"))
            g[MV(p, f"v1.{k}.0")] = deps
    g[MV("example.com/main", "")] = [MV(paths[i], "v1.0.0") for i in range(0, 50)]
    return g


class Reqs:
    def __init__(self, g: dict[MV, list[MV]]) -> None:
        self.g = g

    def required(self, m: MV) -> list[MV]:
        return self.g[m]

    def max(self, path: str, v1: str, v2: str) -> str:
        return v2 if v.compare(v1, v2) < 0 else v1


def bfs(g: dict[MV, list[MV]], start: MV) -> int:
    seen = {start}
    queue = [start]
    for m in queue:
        for r in g[m]:
            if r not in seen:
                seen.add(r)
                queue.append(r)
    return len(seen)


def main() -> None:
    g = graph()
    main_mv = MV("example.com/main", "")
    reqs = Reqs(g)
    build = mvs.build_list([main_mv], reqs)
    reached = bfs(g, main_mv)
    ours = best_of(3, lambda: mvs.build_list([main_mv], reqs))
    peer = best_of(3, lambda: bfs(g, main_mv))
    print(
        f"graph: {len(g)} module versions, {reached} reachable, build list of {len(build)} modules"
    )
    report("mvs build list", ours, "bare BFS", peer, "target: well under 1 s")


if __name__ == "__main__":
    main()
