"""The queue dashboard (issue 17): ClusterQueues, cohorts, flavors, LocalQueues, Workloads, history, live.

Its own process (`python -m webhook dashboard`), reading through watch caches and showing each
user only what a SubjectAccessReview lets them list.

    store.py    watch caches (raw dicts, Workloads parsed once)
    views.py    page rows computed from the caches (pure)
    auth.py     TokenReview + SubjectAccessReviews on a bounded per-user namespace set, rate-limited
    history.py  sampled series, drawn as SVG with pygal
    app.py      routes, sign-in, live stream (server-sent events)
    server.py   informer threads + uvicorn
"""

from __future__ import annotations

__all__: list[str] = []
