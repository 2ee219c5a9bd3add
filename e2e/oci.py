"""Image archives without a daemon or a registry: layer tars and the `docker save` layout around them.

`ctr images import` (containerd) and `docker load` both read the archive this writes:

    manifest.json                [{"Config": "<config hex>.json", "RepoTags": [tag], "Layers": [...]}]
    <config hex>.json            the image config (entrypoint, user, env, the layers' diff_ids)
    <diff_id hex>/layer.tar      each layer, an uncompressed tar, bottom first

The layout is moby's `image/tarexport` (save.go); the config is the OCI image config.
e2e/image.py builds the layers; this module only packs them.
"""

from __future__ import annotations

import hashlib
import io
import json
import platform
import tarfile
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

_ARCHITECTURES = {"x86_64": "amd64", "aarch64": "arm64"}


@dataclass(frozen=True)
class Layer:
    """An uncompressed layer tar and its digest (the config's diff_id names it)."""

    path: Path
    diff_id: str  # "sha256:<hex>"
    created_by: str

    @classmethod
    def of(cls, path: Path, created_by: str) -> Layer:
        return cls(path, f"sha256:{file_digest(path)}", created_by)


@dataclass(frozen=True)
class ImageConfig:
    """The run settings a Dockerfile would give (ENTRYPOINT, CMD, USER, ENV, EXPOSE)."""

    entrypoint: Sequence[str] = ()
    cmd: Sequence[str] = ()
    user: str = ""
    env: Mapping[str, str] = field(default_factory=dict)
    exposed_ports: Sequence[str] = ()  # "9443/tcp"


def file_digest(path: Path) -> str:
    """Hex sha256 of a file, read in chunks (layers are hundreds of MB)."""
    with path.open("rb") as f:
        return hashlib.file_digest(f, "sha256").hexdigest()


def write_layer(root: Path, out: Path, *, paths: Iterable[str] = (".",), exclude_contents: Iterable[str] = ()) -> None:
    """Tar `paths` (relative to `root`) into `out` with numeric owners, in sorted order.

    `exclude_contents` lists directories kept empty (dev, proc, ...: the runtime mounts them).
    An overlayfs whiteout (a 0:0 character device) is refused: it records a deleted lower file,
    and packing it as a device would give the image a wrong file instead of no file.
    """
    emptied = {f"./{p.strip('/')}" for p in exclude_contents}

    def keep(info: tarfile.TarInfo) -> tarfile.TarInfo | None:
        if any(info.name.startswith(f"{d}/") for d in emptied):
            return None
        if info.ischr() and info.devmajor == 0 and info.devminor == 0:
            raise ValueError(f"overlay whiteout {info.name} under {root}: a lower layer's file was deleted")
        info.uname = info.gname = ""
        return info

    tmp = out.with_name(out.name + ".tmp")
    with tarfile.open(tmp, "w", format=tarfile.PAX_FORMAT) as tar:
        for rel in paths:
            tar.add(root / rel, arcname="." if rel == "." else f"./{rel.strip('/')}", filter=keep)
    tmp.replace(out)


def _config(layers: Sequence[Layer], config: ImageConfig) -> dict[str, Any]:
    run: dict[str, Any] = {"Env": [f"{k}={v}" for k, v in config.env.items()]}
    if config.entrypoint:
        run["Entrypoint"] = list(config.entrypoint)
    if config.cmd:
        run["Cmd"] = list(config.cmd)
    if config.user:
        run["User"] = config.user
    if config.exposed_ports:
        run["ExposedPorts"] = {port: {} for port in config.exposed_ports}
    return {
        "architecture": _ARCHITECTURES.get(platform.machine(), platform.machine()),
        "os": "linux",
        "config": run,
        "rootfs": {"type": "layers", "diff_ids": [layer.diff_id for layer in layers]},
        "history": [{"created_by": layer.created_by} for layer in layers],
    }


def write_archive(out: Path, *, tag: str, layers: Sequence[Layer], config: ImageConfig) -> str:
    """Write the archive for image `tag` (name:tag) and return its config digest (the image ID)."""
    raw = json.dumps(_config(layers, config), sort_keys=True, separators=(",", ":")).encode()
    config_hex = hashlib.sha256(raw).hexdigest()
    names = [f"{layer.diff_id.removeprefix('sha256:')}/layer.tar" for layer in layers]
    manifest = json.dumps([{"Config": f"{config_hex}.json", "RepoTags": [tag], "Layers": names}]).encode()
    tmp = out.with_name(out.name + ".tmp")
    with tarfile.open(tmp, "w") as tar:
        for name, data in (("manifest.json", manifest), (f"{config_hex}.json", raw)):
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
        for name, layer in zip(names, layers, strict=True):
            tar.add(layer.path, arcname=name)
    tmp.replace(out)
    return f"sha256:{config_hex}"
