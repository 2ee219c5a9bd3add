"""What gets installed is what was reviewed: hashed locks, a base image by digest, a verified Debian.

- requirements/runtime.txt and dev.txt (`make lock`) pin every package pyproject.toml needs, each
  with hashes, within pyproject's ranges, and nothing that nothing needs; runtime pins equal dev's.
- `make venv`, the Dockerfile and the daemon-free image (e2e/image.py) install from them with
  --require-hashes, the project itself with --no-deps.
- The Dockerfile's base carries a digest and refuses a BASE without one.
- debootstrap checks bookworm's Release against Debian's keys pinned by fingerprint (e2e/debkeys.py).
"""

from __future__ import annotations

import hashlib
import os
import re
import subprocess
import sys
import tomllib
from dataclasses import dataclass
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parents[2]
E2E_DIR = ROOT / "e2e"
if str(E2E_DIR) not in sys.path:
    sys.path.insert(0, str(E2E_DIR))

import debkeys  # noqa: E402
import image  # noqa: E402

REQS = ROOT / "requirements"
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())
#: What may stand in a "# via" line for a package that is asked for directly.
ROOTS = {"pykueue (pyproject.toml)", "-r requirements/build.in", "-r requirements/uv.in"}
#: uvicorn[standard]'s extras other than PyYAML (a direct dependency), by import name.
UVICORN_EXTRAS = {"uvloop": "uvloop", "httptools": "httptools", "websockets": "websockets",
                  "watchfiles": "watchfiles", "python-dotenv": "dotenv"}  # fmt: skip


@dataclass(frozen=True, slots=True)
class Pin:
    version: str
    hashes: frozenset[str]
    via: frozenset[str]


def read_lock(path: Path) -> dict[str, Pin]:
    """`name==version [; marker]`, its `--hash` lines and its `# via` lines, per canonical name."""
    pins: dict[str, Pin] = {}
    name = version = ""
    hashes: set[str] = set()
    via: set[str] = set()

    def close() -> None:
        if name:
            pins[name] = Pin(version, frozenset(hashes), frozenset(via))

    for raw in path.read_text().splitlines():
        line = raw.strip().rstrip("\\").strip()
        if not raw.startswith(" ") and "==" in line:
            close()
            spec = line.split(";")[0].strip()
            pkg, version = spec.split("==")
            name, hashes, via = canonicalize_name(pkg), set(), set()
        elif line.startswith("--hash="):
            hashes.add(line.removeprefix("--hash="))
        elif line.startswith("# via ") or line.startswith("#   "):
            via.add(line.removeprefix("# via ").removeprefix("#   ").strip())
    close()
    return pins


RUNTIME = read_lock(REQS / "runtime.txt")
DEV = read_lock(REQS / "dev.txt")


def _project_requirements(*, dev: bool) -> list[Requirement]:
    names = [*PYPROJECT["build-system"]["requires"], *PYPROJECT["project"]["dependencies"]]
    if dev:
        names += PYPROJECT["project"]["optional-dependencies"]["dev"]
    return [Requirement(r) for r in names]


@pytest.mark.parametrize(
    ("pins", "dev"), [pytest.param(RUNTIME, False, id="runtime.txt"), pytest.param(DEV, True, id="dev.txt")]
)
def test_lock_pins_every_requirement_within_pyprojects_range(pins: dict[str, Pin], dev: bool) -> None:
    wrong = []
    for req in _project_requirements(dev=dev):
        pin = pins.get(canonicalize_name(req.name))
        if pin is None or not req.specifier.contains(pin.version, prereleases=True):
            wrong.append(f"{req} -> {pin.version if pin else 'not pinned'}")
    assert not wrong, f"the lock is stale, run `make lock`: {wrong}"


@pytest.mark.parametrize("lock", ["runtime.txt", "dev.txt", "uv.txt"])
def test_every_pin_has_hashes_and_is_needed(lock: str) -> None:
    pins = read_lock(REQS / lock)
    assert pins
    assert [n for n, p in pins.items() if not p.hashes or not all(h.startswith("sha256:") for h in p.hashes)] == []
    # Needed: asked for by pyproject.toml / a .in file, or by another pin (a constraint alone is not a need).
    orphans = [n for n, p in pins.items() if not p.via & {*pins, *ROOTS}]
    assert orphans == [], f"pinned but needed by nothing (run `make lock`): {orphans}"


def test_runtime_pins_are_the_same_in_dev() -> None:
    """The venv the tests run in holds exactly the image's versions and files (dev.txt is resolved under -c runtime.txt)."""
    differ = [n for n, p in RUNTIME.items() if n not in DEV or (DEV[n].version, DEV[n].hashes) != (p.version, p.hashes)]
    assert differ == []


def test_build_in_is_pyprojects_build_system() -> None:
    lines = [line for line in (REQS / "build.in").read_text().splitlines() if line and not line.startswith("#")]
    assert sorted(lines) == sorted(PYPROJECT["build-system"]["requires"])


def test_only_the_uvicorn_extras_the_code_imports_are_locked() -> None:
    source = "\n".join(p.read_text() for p in (ROOT / "webhook").rglob("*.py"))
    assert not any("[" in r for r in PYPROJECT["project"]["dependencies"] if r.startswith("uvicorn"))
    locked = {pkg for pkg in UVICORN_EXTRAS if pkg in RUNTIME}
    imported = {pkg for pkg, module in UVICORN_EXTRAS.items() if re.search(rf"\b{module}\b", source)}
    assert locked == imported == {"httptools"}


# -- installers ---------------------------------------------------------------------------------


def _make_dry_run(target: str) -> list[str]:
    """The commands `make -B TARGET` would run, printed (-n), run from an empty directory's view."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MAKE", "MFLAGS"))}
    res = subprocess.run(
        ["make", "-n", "-B", "-C", str(ROOT), target], capture_output=True, text=True, env=env, check=True
    )
    return res.stdout.replace("\\\n", " ").splitlines()


def test_make_venv_installs_the_dev_lock_with_hashes_then_the_project_without_deps() -> None:
    pips = [line for line in _make_dry_run("venv") if "pip install" in line]
    assert len(pips) == 2
    assert "--require-hashes" in pips[0] and "-r requirements/dev.txt" in pips[0]
    assert "--no-deps" in pips[1] and "--no-build-isolation" in pips[1] and "-r " not in pips[1]


def test_make_lock_writes_hashed_universal_locks() -> None:
    compiles = [line for line in _make_dry_run("lock") if "pip compile" in line]
    assert {re.search(r"-o (\S+)", c).group(1) for c in compiles} == {  # type: ignore[union-attr]
        "requirements/runtime.txt",
        "requirements/dev.txt",
        "requirements/uv.txt",
    }
    assert all("--generate-hashes" in c and "--universal" in c for c in compiles)


def _dockerfile() -> list[str]:
    """Dockerfile instructions with continuation lines joined."""
    text = (ROOT / "Dockerfile").read_text().replace("\\\n", " ")
    return [line.strip() for line in text.splitlines() if line.strip() and not line.lstrip().startswith("#")]


def test_dockerfile_installs_only_from_the_runtime_lock_with_hashes() -> None:
    pips = [line for line in _dockerfile() if "pip install" in line]
    assert pips
    for line in pips:
        for command in line.split("&&"):
            if "pip install" in command:
                assert ("--require-hashes" in command and "runtime.txt" in command) or "--no-deps" in command, command
    assert "COPY requirements/runtime.txt" in "\n".join(_dockerfile())


def test_dockerfile_base_is_pinned_by_digest() -> None:
    default = next(line for line in _dockerfile() if line.startswith("ARG BASE="))
    assert re.fullmatch(r"ARG BASE=python:3\.11\.\d+-slim-bookworm@sha256:[0-9a-f]{64}", default)


@pytest.mark.parametrize(
    ("base", "allow", "refused"),
    [
        pytest.param("python:3.11.10-slim-bookworm@sha256:" + "a" * 64, "", False, id="digest"),
        pytest.param("python:3.11.10-slim-bookworm", "", True, id="tag only"),
        pytest.param("python@sha256:abc", "", True, id="short digest"),
        pytest.param("python:3.11.10-slim-bookworm", "1", False, id="local stand-in, allowed"),
    ],
)
def test_dockerfile_refuses_a_base_without_digest(base: str, allow: str, refused: bool) -> None:
    guard = next(line for line in _dockerfile() if line.startswith("RUN case"))
    res = subprocess.run(
        ["sh", "-c", guard.removeprefix("RUN ")],
        env={"PATH": "/usr/bin:/bin", "BASE": base, "ALLOW_UNPINNED_BASE": allow},
        capture_output=True,
        text=True,
        check=False,
    )
    assert (res.returncode != 0) == refused
    assert ("has no @sha256:<digest>" in res.stderr) == refused


def test_image_deps_layer_installs_the_runtime_lock_with_hashes() -> None:
    assert image.RUNTIME_LOCK == REQS / "runtime.txt"
    script = image.deps_install_script()
    assert "--require-hashes" in script and "--only-binary :all:" in script and "-r /tmp/runtime.txt" in script


# -- the Debian keyring -------------------------------------------------------------------------


def _packet(tag: int, body: bytes, *, new_format: bool) -> bytes:
    if new_format:
        assert len(body) < 192
        return bytes([0xC0 | tag, len(body)]) + body
    return bytes([0x80 | (tag << 2) | 1]) + len(body).to_bytes(2, "big") + body


def _key(seed: int, *, new_format: bool = False) -> tuple[str, bytes]:
    """A v4 public key packet with a user ID and a signature after it, and its fingerprint."""
    body = bytes([4]) + seed.to_bytes(4, "big") + bytes([22]) + hashlib.sha256(str(seed).encode()).digest()
    fpr = hashlib.sha1(b"\x99" + len(body).to_bytes(2, "big") + body).hexdigest().upper()
    block = _packet(6, body, new_format=new_format)
    block += _packet(13, f"key {seed}".encode(), new_format=new_format) + _packet(2, b"sig", new_format=new_format)
    return fpr, block


def test_keyring_keeps_only_the_pinned_keys_whole() -> None:
    (a, block_a), (b, block_b), (c, block_c) = _key(1), _key(2, new_format=True), _key(3)
    source = block_a + block_b + block_c
    assert list(debkeys.keys(source)) == [a, b, c]
    assert debkeys.pinned_keyring(source, {c: "third", a: "first"}) == block_c + block_a


def test_keyring_missing_a_pinned_key_is_refused_by_name() -> None:
    (a, block_a), (b, _) = _key(1), _key(2)
    with pytest.raises(debkeys.KeyringError, match=f"lacks pinned key.*{b} \\(the other\\)"):
        debkeys.pinned_keyring(block_a, {a: "one", b: "the other"})


def test_keyring_that_is_not_openpgp_is_refused() -> None:
    with pytest.raises(debkeys.KeyringError, match="not an OpenPGP keyring"):
        debkeys.keys(b"-----BEGIN PGP PUBLIC KEY BLOCK-----")
    with pytest.raises(debkeys.KeyringError, match="truncated"):
        debkeys.keys(_key(1)[1][:-1])


def test_pinned_keys_are_bookworms_signers() -> None:
    assert all(re.fullmatch(r"[0-9A-F]{40}", fpr) for fpr in debkeys.PINNED)
    assert any("(12/bookworm)" in name for name in debkeys.PINNED.values())


def test_debootstrap_checks_the_release_against_the_keyring(tmp_path: Path) -> None:
    cmd = image.debootstrap_command(tmp_path / "rootfs", keyring=tmp_path / "k.gpg")
    assert f"--keyring={tmp_path / 'k.gpg'}" in cmd
    assert not any("no-check" in arg or "allow-unauthenticated" in arg for arg in cmd)


@pytest.mark.parametrize(
    ("line", "is_signature"),
    [
        pytest.param("    E: Release signed by unknown key (key id F8D2585B8783D481)", True, id="unknown key"),
        pytest.param("E: Invalid Release signature (key id 6ED0E7B82643E131)", True, id="bad signature"),
        pytest.param("E: gpgv not installed, but required for Release verification", True, id="no gpgv"),
        pytest.param("    I: Checking Release signature", False, id="progress line"),
        pytest.param("E: Couldn't download packages: python3", False, id="network"),
    ],
)
def test_debootstrap_signature_failures_are_told_apart(line: str, is_signature: bool) -> None:
    assert image.is_signature_error(line) == is_signature
