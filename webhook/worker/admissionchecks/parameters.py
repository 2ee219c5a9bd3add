"""The configuration object an AdmissionCheck's `spec.parameters` names, for every admission check
controller, with upstream's error texts.

Mirrors upstream v0.19.2 `pkg/util/admissioncheck/admissioncheck.go` (`ConfigHelper.ConfigFromRef`,
`refValidForGK`, `ErrNilParametersRef`, `ErrBadParametersRef`) and the API server's NotFound text.
"""

from __future__ import annotations

from collections.abc import Mapping

from webhook.api import constants as c
from webhook.api.objects import Obj

__all__ = ["BadParametersRef", "ConfigNotFound", "config_from_ref"]


class BadParametersRef(Exception):
    """`spec.parameters` is missing or does not name an object of the controller's kind."""


class ConfigNotFound(Exception):
    """The named configuration does not exist (the API's NotFound message)."""


def config_from_ref(ref: Obj | None, configs: Mapping[str, Obj], *, kind: str, resource: str) -> Obj:
    """The object of `kind` (in `kueue.x-k8s.io`, stored as `resource`, e.g.
    `multikueueconfigs.kueue.x-k8s.io`) that `ref` names, from `configs` by name."""
    if ref is None:
        raise BadParametersRef("missing parameters reference")
    name, group, ref_kind = str(ref.get("name") or ""), str(ref.get("apiGroup") or ""), str(ref.get("kind") or "")
    if not name:
        raise BadParametersRef("empty name: bad parameters reference")
    if group != c.GROUP:
        raise BadParametersRef(f'wrong group "{group}", expecting "{c.GROUP}": bad parameters reference')
    if ref_kind != kind:
        raise BadParametersRef(f'wrong kind "{ref_kind}", expecting "{kind}": bad parameters reference')
    config = configs.get(name)
    if config is None:
        raise ConfigNotFound(f'{resource} "{name}" not found')
    return config
