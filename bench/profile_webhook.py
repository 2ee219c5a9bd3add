"""Where our webhook server spends its time under bench_webhook.py's load: cProfile of the server.

The server (same uvicorn/TLS set-up as bench_webhook.py, profiled in its own process) answers
--requests mutate reviews of one kind from the same closed-loop loader; on exit it prints the
top functions by own time and by cumulative time and writes the raw stats for snakeviz/pstats.

    python bench/profile_webhook.py [--kind job|pod] [--requests 6000] [--out .run/profile-job.prof]
"""

from __future__ import annotations

import argparse
import cProfile
import io
import multiprocessing as mp
import os
import pstats
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "bench")]

import bench_webhook as bw  # noqa: E402

KINDS = {"job": ("/mutate-batch-v1-job", bw._job_review), "pod": ("/mutate--v1-pod", bw._pod_review)}


def _profiled_serve(port: int, cert_dir: str, out: str) -> None:
    """bench_webhook._serve's set-up; SIGTERM ends the server without re-raising, so we can dump."""
    import contextlib
    import logging
    import signal

    import uvicorn

    from webhook import tls
    from webhook.admission.app import create_app
    from webhook.config import parse

    class Server(uvicorn.Server):
        @contextlib.contextmanager
        def capture_signals(self) -> Any:
            signal.signal(signal.SIGTERM, lambda *_: setattr(self, "should_exit", True))
            yield

    logging.disable(logging.CRITICAL)
    cfg = parse(
        "apiVersion: config.kueue.x-k8s.io/v1beta2\nkind: Configuration\n"
        "integrations:\n  frameworks: [batch/job, pod]\n"
    )
    config = uvicorn.Config(
        create_app(cfg), host="127.0.0.1", port=port, log_config=None, access_log=False, lifespan="off"
    )
    config.load()
    config.ssl = tls.server_context(cert_dir)
    prof = cProfile.Profile()
    prof.enable()
    try:
        Server(config).run()
    finally:
        prof.disable()
        prof.dump_stats(out)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--kind", choices=sorted(KINDS), default="job")
    p.add_argument("--requests", type=int, default=6000)
    p.add_argument("--concurrency", type=int, default=32)
    p.add_argument("--out", type=Path, default=None)
    p.add_argument("--top", type=int, default=25)
    args = p.parse_args(argv)
    import certs

    path, make = KINDS[args.kind]
    out = (args.out or ROOT / ".run" / f"profile-{args.kind}.prof").resolve()
    out.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as d:
        certs.write_bundle(Path(d), ["127.0.0.1"])
        port = bw._free_port()
        server = mp.Process(target=_profiled_serve, args=(port, d, str(out)))
        server.start()
        try:
            bw._wait(port)
            q: Any = mp.Queue()
            load = mp.Process(
                target=bw._measure,
                args=(port, path, make(), args.requests, args.concurrency, os.path.join(d, "ca.crt"), q),
            )
            load.start()
            rps, p50, p99 = q.get(timeout=600)
            load.join()
        finally:
            server.terminate()  # SIGTERM: uvicorn shuts down, the profile is dumped
            server.join(30)
    print(
        f"mutate {args.kind} under cProfile: {rps:.0f} req/s, p50 {p50:.2f} ms, p99 {p99:.2f} ms "
        f"(profiling overhead included; compare with bench_webhook.py for absolute numbers)"
    )
    for key in ("tottime", "cumulative"):
        buf = io.StringIO()
        pstats.Stats(str(out), stream=buf).strip_dirs().sort_stats(key).print_stats(args.top)
        text = buf.getvalue()
        print(f"--- top {args.top} by {key}")
        print(text[text.index("   ncalls") :] if "   ncalls" in text else text)
    print(f"raw stats: {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
