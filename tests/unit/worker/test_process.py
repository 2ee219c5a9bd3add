"""The worker supervisor: `terminate` (a draining server's first step) signals the worker without waiting,
and no replacement starts."""

from __future__ import annotations

import sys
import time
from pathlib import Path

from webhook.worker.process import MIN_BACKOFF_S, Supervisor

# Takes 2 s to exit after SIGTERM, as a worker releasing its lease takes a moment.
SLOW_WORKER = """\
import signal, sys, time
signal.signal(signal.SIGTERM, lambda *_: (time.sleep(2), sys.exit(0)))
open(sys.argv[1], "w").close()
time.sleep(60)
"""


def test_terminate_signals_the_worker_without_waiting_and_starts_no_other(tmp_path: Path) -> None:
    marker = tmp_path / "up"
    supervisor = Supervisor([])
    supervisor.argv = [sys.executable, "-c", SLOW_WORKER, str(marker)]
    supervisor.start()
    deadline = time.monotonic() + 10
    while not marker.exists():
        assert time.monotonic() < deadline, "worker did not start"
        time.sleep(0.02)
    worker = supervisor.proc
    assert worker is not None

    started = time.monotonic()
    supervisor.terminate()
    assert time.monotonic() - started < 1.0
    assert worker.poll() is None  # still releasing
    assert worker.wait(timeout=5) == 0
    time.sleep(MIN_BACKOFF_S * 2)
    assert supervisor.proc is worker, "a terminated supervisor must not start another worker"
    supervisor.stop()
