"""The one minimum-rate rule (wgtpm.httpclient.RateRule), kept by a body read whole
(MinRate) and by a file streamed to disk (modfetch's RateWindow) alike."""

from __future__ import annotations

import time

import pytest

from wgtpm.httpclient import RateRule, TransportError
from wgtpm.httpclient._pace import MinRate
from wgtpm.modfetch import FetchOptions, _transfer


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    now = [1000.0]
    monkeypatch.setattr(time, "monotonic", lambda: now[0])
    return now


def test_a_window_is_judged_once_it_is_whole(clock: list[float]) -> None:
    rule = RateRule(100, 2.0)
    clock[0] += 1.9
    assert not rule.add(10)  # slow so far, but the window is not over
    clock[0] += 0.2
    assert rule.add(10)  # 20 bytes in 2.1 s: under 100 a second
    rule.restart()
    clock[0] += 2.5
    assert not rule.add(300)  # 300 in 2.5 s: fast enough, and a new window starts
    clock[0] += 1.0
    assert not rule.add(0)
    clock[0] += 1.0
    assert rule.add(0)  # nothing in the whole next window
    assert str(rule) == "slower than 100 bytes/s for 2s"


def test_both_users_cut_at_the_same_point_with_their_own_words(clock: list[float]) -> None:
    whole = MinRate("http://h/x", 100, 2.0)
    whole.begin()
    stream = _transfer.RateWindow(FetchOptions(min_rate=100, rate_window=2.0))
    clock[0] += 2.0
    whole.chunk(200)  # exactly 100 a second: kept
    stream.add(200)
    clock[0] += 2.0
    with pytest.raises(TransportError, match=r"slower than 100 bytes/s for 2s; cut"):
        whole.chunk(199)
    with pytest.raises(_transfer.Cut, match=r"slower than 100 bytes/s for 2s; reconnecting"):
        stream.add(199)
