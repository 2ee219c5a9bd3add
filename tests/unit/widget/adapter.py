"""The Widget's worker module: what a registry row's `adapter` names. Its reconciler records what
the Manager hands it."""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import Any

from webhook.worker.jobframework.setup import Resource, SetupContext, Wiring

WIDGETS = Resource("widgets", "example.com/v1")


class WidgetReconciler:
    def __init__(self) -> None:
        self.started = threading.Event()
        self.seen: list[tuple[str, str, str]] = []

    def start(self) -> None:
        self.started.set()

    def on_event(self, kind: str, etype: str, obj: Mapping[str, Any], old: Mapping[str, Any] | None) -> None:
        if kind == WIDGETS.kind:
            self.seen.append((kind, etype, str(obj["metadata"]["name"])))


def setup(ctx: SetupContext) -> Wiring:
    return Wiring(WidgetReconciler(), watches=(WIDGETS,))
