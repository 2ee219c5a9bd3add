"""What the e2e runs need from the host: root, and Debian packages they install themselves.

The real node (e2e/node.py) runs containerd, runc, the CNI plugins and kube-proxy's iptables;
the daemon-free image build (e2e/image.py) runs debootstrap; the dashboard's browser test runs
Debian's chromium and its driver; the monitoring checks (e2e/test_monitoring.py) run promtool. Each is looked up by the file it
installs; a missing one is installed with apt-get when we are root, or refused with a message
naming the packages and the command. Nothing is ever skipped silently.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path

#: Debian package for each executable (or absolute path) the real node uses.
NODE_PACKAGES: Mapping[str, str] = {
    "containerd": "containerd",
    "ctr": "containerd",
    "runc": "runc",
    "/usr/lib/cni/bridge": "containernetworking-plugins",
    "/usr/lib/cni/host-local": "containernetworking-plugins",
    "/usr/lib/cni/loopback": "containernetworking-plugins",
    "iptables": "iptables",
    "conntrack": "conntrack",
    "ip": "iproute2",
    "sysctl": "procps",
    "mount": "mount",
}
#: ... for the daemon-free image build (gpgv and the keyring: debootstrap checks the Release signature).
IMAGE_PACKAGES: Mapping[str, str] = {
    "debootstrap": "debootstrap",
    "chroot": "coreutils",
    "gpgv": "gpgv",
    "/usr/share/keyrings/debian-archive-keyring.gpg": "debian-archive-keyring",
}
#: ... and for the dashboard's test in a real browser (never a browser downloaded at test time).
BROWSER_PACKAGES: Mapping[str, str] = {"chromium": "chromium", "chromedriver": "chromium-driver"}
#: ... and for checking the alert rules and the Grafana dashboard's queries (promtool, from Debian's prometheus).
PROMETHEUS_PACKAGES: Mapping[str, str] = {"promtool": "prometheus"}


class HostError(RuntimeError):
    """The host lacks something and we may not (or could not) provide it; the message says what to run."""


def cache_root() -> Path:
    """~/.cache/pykueue, as e2e/build-binaries.sh computes it: what outlives a run (images, binaries)."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(os.environ.get("PYKUEUE_CACHE") or Path(base) / "pykueue")


def log(msg: str) -> None:
    print(f"host: {msg}", file=sys.stderr, flush=True)


def require_root(what: str) -> None:
    """Refuse early, before anything is started, rather than fail halfway through a bring-up."""
    if os.geteuid() != 0:
        raise HostError(f"{what} needs root (network namespace, containerd, mounts, chroot); run it as root")


def _present(exe: str) -> bool:
    if exe.startswith("/"):  # a file the package installs: a binary, or data such as a keyring
        return os.path.isfile(exe)
    return shutil.which(exe, path=f"{os.environ.get('PATH', '')}:/usr/sbin:/sbin") is not None


def missing_packages(wanted: Mapping[str, str]) -> list[str]:
    """The packages whose files are absent, sorted."""
    return sorted({pkg for exe, pkg in wanted.items() if not _present(exe)})


def ensure_packages(wanted: Mapping[str, str]) -> None:
    """Install what is missing with apt-get (root only); raise HostError naming the command otherwise."""
    missing = missing_packages(wanted)
    if not missing:
        return
    command = f"apt-get update && apt-get install -y --no-install-recommends {' '.join(missing)}"
    if os.geteuid() != 0:
        raise HostError(f"missing Debian packages {', '.join(missing)}; install them as root: {command}")
    log(f"installing {', '.join(missing)} (apt-get)")
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    for cmd in (["apt-get", "update", "-q"], ["apt-get", "install", "-y", "-q", "--no-install-recommends", *missing]):
        res = subprocess.run(cmd, env=env, capture_output=True, text=True, check=False)
        if res.returncode != 0:
            raise HostError(
                f"{' '.join(cmd)} exited {res.returncode}: {res.stderr.strip()[-2000:]}; install by hand: {command}"
            )
    still = missing_packages(wanted)
    if still:
        raise HostError(f"apt-get installed {', '.join(missing)} but {', '.join(still)} still lack files")


def unmount_under(path: Path) -> None:
    """Unmount everything at or below `path`, deepest first, so that no rmtree walks into a live
    mount (an interrupted chroot's /proc, a pod's volumes, rootfs overlays, network namespaces)."""
    prefix = str(path.resolve())
    with open("/proc/self/mounts") as f:
        points = [line.split()[1].encode().decode("unicode_escape") for line in f]
    for point in sorted((p for p in points if p == prefix or p.startswith(prefix + "/")), reverse=True):
        subprocess.run(["umount", "-l", point], check=False)
