"""Who submitted a job: our `pykueue.io/submitted-by` annotation, stamped at creation (ours, not upstream's).

The usage records' `user` dimension and `kubectl kueue usage --by user` read it, so users must not
be able to write it:

* CREATE (mutating webhook of every job kind and of Workload): the annotation is set to the
  AdmissionReview's `userInfo.username`, overwriting whatever the object carried. One exception:
  a request from our own identity (the one the server authenticates as, which the worker shares:
  `Lookups.own_identity`) is left as it is, since the worker creates a job's Workload with the
  job's annotation copied (`worker.jobframework.plan.new_workload`), or none for an older job.
* UPDATE (validating webhook): any change, addition or removal is refused (Forbidden), except by
  our own identity. A mutating webhook alone would not do: most job kinds' mutating webhooks run on
  CREATE only, and a later webhook in the chain could change the annotation back.

Only objects users submit are stamped: every Workload, and objects that name a queue (after
defaulting) and have no controller: a JobSet's Jobs or a Job's pods, created by their controllers,
carry no Workload of their own (their owner's does), and would otherwise carry a controller's name.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from webhook.admission.context import Context
from webhook.api import constants as c
from webhook.api import fields as f

__all__ = ["stamp", "validate_update"]

_PATH = f.Path("metadata").child("annotations").key(c.SUBMITTED_BY)


def _annotation(obj: Mapping[str, Any]) -> str | None:
    value = ((obj.get("metadata") or {}).get("annotations") or {}).get(c.SUBMITTED_BY)
    return None if value is None else str(value)


def _is_trusted(ctx: Context) -> bool:
    own = ctx.lookups.own_identity()
    return bool(own) and ctx.user == own


def stamp(obj: dict[str, Any], ctx: Context, *, is_workload: bool) -> None:
    """Set the annotation on a new object that names a queue (every new Workload) to its creator."""
    meta = obj.get("metadata") or {}
    submitted = bool((meta.get("labels") or {}).get(c.QUEUE_LABEL)) and not any(
        ref.get("controller") for ref in meta.get("ownerReferences") or ()
    )
    if not ctx.user or not (is_workload or submitted):
        return
    if _is_trusted(ctx):
        return  # the worker: what it copied from the job (nothing for a job older than this) stands
    obj.setdefault("metadata", {}).setdefault("annotations", {})[c.SUBMITTED_BY] = ctx.user


def validate_update(old: Mapping[str, Any], new: Mapping[str, Any], ctx: Context) -> list[f.FieldError]:
    """Forbidden: changing, adding or removing the annotation, unless our own identity does it."""
    if _annotation(old) == _annotation(new) or _is_trusted(ctx):
        return []
    return [f.forbidden(_PATH, "is set by Kueue at creation and cannot be changed")]
