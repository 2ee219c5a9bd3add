"""`kubectl kueue` (also `kueuectl`): upstream kueuectl's commands, in Python, over the Kubernetes API.

Modules: `api` (paths, paged lists, discovery, the visibility API), `output` (tables, ages, -o printers),
`session` (flags shared by every command), `create`, `listing`, `control` (stop, resume, delete
workload), `passthrough` (get/describe/edit/patch/delete handed to kubectl) and `app` (the root and the
entry points). Mirrors upstream's cmd/kueuectl.
"""

from __future__ import annotations

__all__: list[str] = []
