#!/usr/bin/env python3
"""Our server's image with no Docker daemon and no registry, for `make e2e-real` (and CI).

Three layers, as the Dockerfile's stages make them, each an uncompressed tar cached under
~/.cache/pykueue/image (PYKUEUE_CACHE moves it):

1. base     Debian bookworm (debootstrap minbase) with python3, python3-venv and ca-certificates;
            built once (a few minutes), keyed on the suite, mirror, package list and pinned keys.
            debootstrap checks the Release signature against Debian's keys pinned by fingerprint
            (e2e/debkeys.py); a failed check fails the build.
2. deps     /opt/pykueue, a venv with the hashed lock requirements/runtime.txt (dependencies and
            build backend, `pip install --require-hashes`, wheels only) and the `kueue` user
            (uid 65532); built again only when the lock changes.
3. project  this checkout, `pip install --no-deps` into that venv: every build, in seconds.

Layers 2 and 3 are made in a chroot on an overlayfs over the layers below, so that the upper
directory holds exactly the new files. pip runs with a clean environment (the host's PIP_*
settings stay out) and trusts the host's CA bundle: PyPI may sit behind a TLS-inspecting proxy.
The pause image (the pod sandbox) packs the static `pause` binary that
`e2e/build-binaries.sh --node` builds.

    python e2e/image.py server --out FILE.tar [--tag pykueue:dev]
    python e2e/image.py pause --out FILE.tar --binary BIN_DIR/pause
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from pathlib import Path

E2E_DIR = Path(__file__).resolve().parent
REPO_ROOT = E2E_DIR.parent
if str(E2E_DIR) not in sys.path:
    sys.path.insert(0, str(E2E_DIR))

import debkeys  # noqa: E402
import host  # noqa: E402
import oci  # noqa: E402

SUITE = "bookworm"
MIRROR = "http://deb.debian.org/debian"
BASE_PACKAGES = ("python3", "python3-venv", "ca-certificates")
VENV = "/opt/pykueue"
#: What the Dockerfile copies into its build stage.
SOURCES = ("pyproject.toml", "README.md", "webhook", "certs")
#: The runtime lock (`make lock`): every dependency and the build backend, pinned with hashes.
RUNTIME_LOCK = REPO_ROOT / "requirements" / "runtime.txt"
#: As the Dockerfile and `make venv` install: a file whose hash is not in the lock is refused, and
#: wheels only, so no package's build code runs in the chroot.
PIP_LOCKED = ("--require-hashes", "--only-binary", ":all:")
#: The Dockerfile's `useradd --uid 65532 kueue`, as /etc/passwd and /etc/group lines.
USER_LINES = ("kueue:x:65532:65532::/nonexistent:/usr/sbin/nologin\n", "kueue:x:65532:\n")
#: Directories the runtime mounts over; their contents stay out of the base layer.
RUNTIME_DIRS = ("dev", "proc", "sys", "run", "tmp")
#: What debootstrap leaves that an image does not need (as Debian's slim images drop it).
PRUNED = ("var/cache/apt/archives", "var/lib/apt/lists", "usr/share/doc", "usr/share/man", "usr/share/info")
HOST_CA_BUNDLE = Path("/etc/ssl/certs/ca-certificates.crt")

SERVER_CONFIG = oci.ImageConfig(
    entrypoint=("python", "-m", "webhook"),
    cmd=("serve", "--in-cluster", "--cert-dir", "/tmp/k8s-webhook-server/serving-certs"),
    user="65532:65532",
    env={"PATH": f"{VENV}/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "LANG": "C.UTF-8"},
    exposed_ports=("9443/tcp",),
)
#: The sandbox image containerd's CRI runs each pod's namespaces in (e2e/node.py names it).
PAUSE_IMAGE = "localhost/pykueue/pause:1"
PAUSE_CONFIG = oci.ImageConfig(entrypoint=("/pause",), user="65535:65535")
UPSTREAM_MANAGER_CONFIG = oci.ImageConfig(entrypoint=("/manager",), user="65532:65532")


class ImageError(RuntimeError):
    """A build step failed; the message names it and shows the tool's last output."""

    def __init__(self, step: str, detail: str) -> None:
        super().__init__(f"image: step '{step}' failed: {detail}")
        self.detail = detail


def log(msg: str) -> None:
    print(f"image: {msg}", file=sys.stderr, flush=True)


def _key(*parts: str) -> str:
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()[:16]


def _run(step: str, cmd: Sequence[str], *, env: dict[str, str] | None = None) -> None:
    res = subprocess.run(list(cmd), env=env, capture_output=True, text=True, check=False)
    if res.returncode != 0:
        out = (res.stdout + res.stderr).strip().splitlines()[-20:]
        raise ImageError(step, f"{cmd[0]} exited {res.returncode}:\n" + "\n".join(f"    {line}" for line in out))


def _remove(path: Path) -> None:
    if path.exists():
        host.unmount_under(path)
        shutil.rmtree(path)


@contextlib.contextmanager
def _chroot_on_overlay(lowers: Sequence[Path], upper: Path, scratch: Path) -> Iterator[Path]:
    """The merged tree of `lowers` (top first) with writes going to `upper`, /proc mounted for pip."""
    work, merged = scratch / "work", scratch / "merged"
    for d in (upper, work, merged):
        d.mkdir(parents=True, exist_ok=True)
    options = f"lowerdir={':'.join(map(str, lowers))},upperdir={upper},workdir={work}"
    _run("mount overlay", ["mount", "-t", "overlay", "overlay", "-o", options, str(merged)])
    try:
        _run("mount proc", ["mount", "-t", "proc", "proc", str(merged / "proc")])
        yield merged
    finally:
        host.unmount_under(merged)


def _chroot(step: str, root: Path, script: str, *args: str, network: bool = False) -> None:
    """Run `script` (sh -e) in the chroot with a clean environment; `network` lets pip reach PyPI."""
    env = {
        "PATH": "/usr/sbin:/usr/bin:/sbin:/bin",
        "HOME": "/root",
        "LANG": "C.UTF-8",
        "PIP_NO_CACHE_DIR": "1",
        "PIP_DISABLE_PIP_VERSION_CHECK": "1",
        "PIP_NO_INPUT": "1",
    }
    if network:
        shutil.copyfile("/etc/resolv.conf", root / "etc" / "resolv.conf")
        shutil.copyfile(HOST_CA_BUNDLE, root / "tmp" / "host-ca.crt")
        env |= {"PIP_CERT": "/tmp/host-ca.crt", "SSL_CERT_FILE": "/tmp/host-ca.crt"}
    _run(step, ["chroot", str(root), "/bin/sh", "-ec", script, "sh", *args], env=env)


def _cached_layer(directory: Path) -> oci.Layer | None:
    try:
        meta = json.loads((directory / "layer.json").read_text())
    except (OSError, ValueError):
        return None
    return oci.Layer(directory / "layer.tar", meta["diff_id"], meta["created_by"])


def _record_layer(directory: Path, created_by: str) -> str:
    """Digest the layer tar and record it; layer.json is written last, so its presence means complete."""
    diff_id = oci.Layer.of(directory / "layer.tar", created_by).diff_id
    (directory / "layer.json").write_text(json.dumps({"diff_id": diff_id, "created_by": created_by}))
    return diff_id


def debootstrap_command(target: Path, *, keyring: Path) -> list[str]:
    """debootstrap with an explicit keyring: the Release signature must verify against it."""
    return [
        "debootstrap",
        "--variant=minbase",
        f"--keyring={keyring}",
        f"--include={','.join(BASE_PACKAGES)}",
        SUITE,
        str(target),
        MIRROR,
    ]


def is_signature_error(line: str) -> bool:
    """debootstrap's error lines for a Release that is unsigned, badly signed or signed by another key."""
    line = line.strip()
    return line.startswith("E:") and any(word in line for word in ("signature", "signed by", "gpgv"))


def _debootstrap(target: Path, *, keyring: Path) -> None:
    """Run debootstrap; a signature failure says so plainly, naming the pinned keys."""
    try:
        _run("debootstrap", debootstrap_command(target, keyring=keyring))
    except ImageError as exc:
        if any(is_signature_error(line) for line in exc.detail.splitlines()):
            pinned = ", ".join(f"{fpr} ({name})" for fpr, name in debkeys.PINNED.items())
            raise ImageError(
                "debootstrap",
                f"{SUITE}'s Release file from {MIRROR} did not verify against the pinned Debian keys "
                f"[{pinned}]; nothing was installed from it. {exc.detail}",
            ) from exc
        raise


def base_layer(cache: Path) -> tuple[Path, oci.Layer]:
    """Layer 1: the debootstrap tree (kept as the chroot's bottom) and its tar."""
    directory = cache / f"base-{SUITE}-{_key(SUITE, MIRROR, *BASE_PACKAGES, *debkeys.PINNED)}"
    layer = _cached_layer(directory)
    if layer is not None:
        return directory / "rootfs", layer
    host.ensure_packages(host.IMAGE_PACKAGES)
    tmp = directory.with_name(directory.name + ".tmp")
    _remove(tmp)
    tmp.mkdir(parents=True)
    started = time.monotonic()
    log(f"debootstrap {SUITE} (minbase + {', '.join(BASE_PACKAGES)}): once, takes a few minutes")
    try:
        keyring = debkeys.write_pinned_keyring(tmp / "debian-pinned.gpg")
    except debkeys.KeyringError as exc:
        raise ImageError("pinned Debian keyring", str(exc)) from exc
    try:
        _debootstrap(tmp / "rootfs", keyring=keyring)
    finally:
        host.unmount_under(tmp)
    rootfs = tmp / "rootfs"
    for rel in PRUNED:
        shutil.rmtree(rootfs / rel, ignore_errors=True)
    for rel in ("etc/resolv.conf", "etc/hostname"):  # the host's; the runtime writes its own
        (rootfs / rel).write_text("")
    oci.write_layer(rootfs, tmp / "layer.tar", exclude_contents=RUNTIME_DIRS)
    created_by = (
        f"debootstrap --variant=minbase --keyring=<{' '.join(debkeys.PINNED)}> {SUITE} {' '.join(BASE_PACKAGES)}"
    )
    diff_id = _record_layer(tmp, created_by)
    _remove(directory)
    tmp.rename(directory)
    log(f"base layer built in {time.monotonic() - started:.0f}s")
    return directory / "rootfs", oci.Layer(directory / "layer.tar", diff_id, created_by)


def deps_install_script() -> str:
    """The chroot script of layer 2: the lock at /tmp/runtime.txt into a new venv, hashes required."""
    return f"python3 -m venv {VENV}\n{VENV}/bin/pip install -q {' '.join(PIP_LOCKED)} -r /tmp/runtime.txt"


def deps_layer(cache: Path, rootfs: Path, base: oci.Layer, lock: Path) -> tuple[Path, oci.Layer]:
    """Layer 2: the venv with the `lock`ed packages and the kueue user; returns its overlay upper dir and tar."""
    text = lock.read_text()
    directory = cache / f"deps-{_key(base.diff_id, text)}"
    layer = _cached_layer(directory)
    if layer is not None:
        return directory / "upper", layer
    tmp = directory.with_name(directory.name + ".tmp")
    _remove(tmp)
    started = time.monotonic()
    log(f"installing {lock.name} into {VENV} (the lock changed or first build)")
    with _chroot_on_overlay([rootfs], tmp / "upper", tmp / "scratch") as root:
        (root / "tmp" / "runtime.txt").write_text(text)
        _chroot("pip install the locked dependencies", root, deps_install_script(), network=True)
        for name, line in zip(("passwd", "group"), USER_LINES, strict=True):
            with (root / "etc" / name).open("a") as f:
                f.write(line)
    _remove(tmp / "scratch")
    oci.write_layer(tmp / "upper", tmp / "layer.tar", paths=(VENV.lstrip("/"), "etc/passwd", "etc/group"))
    created_by = f"python3 -m venv {VENV} && pip install {' '.join(PIP_LOCKED)} -r requirements/runtime.txt"
    diff_id = _record_layer(tmp, created_by)
    for old in cache.glob("deps-*"):  # one dependency set at a time: the cache does not grow per edit
        if old != tmp:
            _remove(old)
    tmp.rename(directory)
    log(f"deps layer built in {time.monotonic() - started:.0f}s")
    return directory / "upper", oci.Layer(directory / "layer.tar", diff_id, created_by)


def project_layer(work: Path, lowers: Sequence[Path]) -> oci.Layer:
    """Layer 3: this checkout installed into the venv, offline (dependencies and backend are below)."""
    with _chroot_on_overlay(lowers, work / "upper", work / "scratch") as root:
        for name in SOURCES:
            src = REPO_ROOT / name
            if src.is_dir():
                shutil.copytree(src, root / "src" / name, ignore=shutil.ignore_patterns("__pycache__"))
            else:
                (root / "src").mkdir(exist_ok=True)
                shutil.copy2(src, root / "src" / name)
        # pip check: the lock below must satisfy pyproject.toml's ranges (a stale lock fails here).
        _chroot(
            "pip install the project",
            root,
            f"{VENV}/bin/pip install -q --no-deps --no-build-isolation /src\n{VENV}/bin/pip check",
        )
    oci.write_layer(work / "upper", work / "layer.tar", paths=(VENV.lstrip("/"),))
    return oci.Layer.of(work / "layer.tar", "pip install --no-deps --no-build-isolation .")


def build_server(out: Path, *, tag: str) -> str:
    """Build (or reuse) the layers and write the archive for `tag`; returns the image ID."""
    host.require_root("the daemon-free image build")
    started = time.monotonic()
    cache = host.cache_root() / "image"
    cache.mkdir(parents=True, exist_ok=True)
    rootfs, base = base_layer(cache)
    deps_upper, deps = deps_layer(cache, rootfs, base, RUNTIME_LOCK)
    out.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=cache, prefix="project-") as work:
        try:
            project = project_layer(Path(work), [deps_upper, rootfs])
            image_id = oci.write_archive(out, tag=tag, layers=[base, deps, project], config=SERVER_CONFIG)
        finally:
            host.unmount_under(Path(work))
    log(f"{tag} ({image_id[:19]}) -> {out} in {time.monotonic() - started:.1f}s")
    return image_id


def build_pause(out: Path, *, binary: Path) -> str:
    """The sandbox image: `binary` as /pause, nothing else."""
    return build_static(out, binary=binary, name="pause", tag=PAUSE_IMAGE, config=PAUSE_CONFIG)


def build_upstream_manager(out: Path, *, binary: Path, tag: str) -> str:
    """Upstream Kueue's manager image as its Dockerfile makes it (the static `manager` as /manager, user
    65532), from the binary e2e/build-kueue.sh builds: the calibration for suites that install Kueue."""
    return build_static(out, binary=binary, name="manager", tag=tag, config=UPSTREAM_MANAGER_CONFIG)


def build_static(out: Path, *, binary: Path, name: str, tag: str, config: oci.ImageConfig) -> str:
    """A one-layer image holding a static `binary` as /`name` (`name` may name a directory: bin/x)."""
    out.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=out.parent) as tmp:
        root = Path(tmp) / "root"
        (root / name).parent.mkdir(parents=True)
        shutil.copy2(binary, root / name)
        layer_tar = Path(tmp) / "layer.tar"
        oci.write_layer(root, layer_tar)
        return oci.write_archive(out, tag=tag, layers=[oci.Layer.of(layer_tar, f"COPY {name} /{name}")], config=config)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("image", choices=["server", "pause"])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--tag", default="pykueue:dev", help="server image name:tag")
    parser.add_argument("--binary", type=Path, help="the pause binary (pause image)")
    args = parser.parse_args(argv)
    try:
        if args.image == "server":
            build_server(args.out, tag=args.tag)
        elif args.binary is None:
            parser.error("pause needs --binary")
        else:
            build_pause(args.out, binary=args.binary)
    except (ImageError, host.HostError) as exc:
        print(exc, file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
