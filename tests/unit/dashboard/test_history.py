from __future__ import annotations

from datetime import timedelta

import pytest

from tests.builders import T0, make_wl
from tests.unit.dashboard.fakes import info_of
from webhook.dashboard import views
from webhook.dashboard.history import History


def row(used: int, pending: int) -> views.ClusterQueueRow:
    return views.ClusterQueueRow(
        "cq", "", True, "Ready", pending, 0, 1, (views.Bar("default", "cpu", used, 4000, None, 0, 0),)
    )


@pytest.mark.parametrize(
    "waits", [pytest.param(True, id="with admissions"), pytest.param(False, id="none admitted yet")]
)
def test_samples_draw_as_inline_svg_without_scripts(waits: bool) -> None:
    history = History(keep=3)
    admitted = [info_of(make_wl("w").created(0).reserve("cq", at=30).obj())] if waits else []
    for i in range(5):
        history.sample([row(1000 * i, 5 - i)], admitted, T0 + timedelta(seconds=60 + 10 * i))
    ring = history.series["cq"]
    assert len(ring) == 3 and ring[-1].usage_percent == {"default/cpu": 100.0}
    assert [s.wait_seconds for s in ring] == [None, None, None]  # counted once, in the first sample
    usage, queue = history.charts("cq")
    assert usage.startswith("<svg") and "<script" not in usage and "<script" not in queue
    assert history.charts("other") == ("", "")


def test_a_deleted_cluster_queue_loses_its_series() -> None:
    history = History()
    history.sample([row(0, 0)], [], T0)
    history.sample([], [], T0 + timedelta(seconds=10))
    assert history.series == {}
