"""`satisfies_policy`, the preemption policies on effective priority and queue order, with and without
gate SchedulerTimestampPreemptionBuffer (`pkg/scheduler/preemption/common/preemption_policy_test.go`)."""

from __future__ import annotations

from datetime import timedelta

import pytest

from tests.builders import make_wl
from webhook.core.preemption import satisfies_policy
from webhook.core.workload import parse_workload

BUFFER = timedelta(minutes=5)


@pytest.mark.parametrize(
    ("policy", "candidate_priority", "candidate_queued_s", "buffer", "expected"),
    [
        ("LowerPriority", 5, 0, timedelta(0), True),
        ("LowerPriority", 10, 600, timedelta(0), False),
        ("LowerOrNewerEqualPriority", 5, -600, BUFFER, True),  # lower priority: the buffer does not matter
        ("LowerOrNewerEqualPriority", 10, 60, timedelta(0), True),  # equal and newer
        ("LowerOrNewerEqualPriority", 10, -60, timedelta(0), False),  # equal and older
        ("LowerOrNewerEqualPriority", 10, 0, timedelta(0), False),  # equal and queued at the same time
        ("LowerOrNewerEqualPriority", 10, 60, BUFFER, False),  # newer, but inside the buffer
        ("LowerOrNewerEqualPriority", 10, 300, BUFFER, False),  # exactly the buffer is not beyond it
        ("LowerOrNewerEqualPriority", 10, 301, BUFFER, True),
        ("LowerOrNewerEqualPriority", 20, 600, BUFFER, False),
        ("Any", 20, -600, BUFFER, True),
        ("Never", 1, 600, timedelta(0), False),
    ],
)
def test_policy(
    policy: str, candidate_priority: int, candidate_queued_s: float, buffer: timedelta, expected: bool
) -> None:
    preemptor = parse_workload(make_wl("preemptor").priority(10).created(1000).obj())
    candidate = parse_workload(
        make_wl("candidate").priority(candidate_priority).created(1000 + candidate_queued_s).obj()
    )
    assert satisfies_policy(preemptor, candidate, policy, buffer) is expected
