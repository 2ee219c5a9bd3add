"""The keyring debootstrap checks bookworm's Release signature with: Debian's keys, pinned by fingerprint.

Without `--keyring`, debootstrap falls back to whatever the host has and, with no keyring or no
gpgv, builds from an unverified mirror over plain HTTP. So the image build passes `--keyring`
with a file made here: only the transferable keys (primary key, user IDs, subkeys, signatures)
from the host's debian-archive-keyring whose primary fingerprint is in `PINNED`. A host keyring
that lacks one of them fails the build naming it; a Release file signed by none of them fails
debootstrap itself ("Release signed by unknown key"), before any package is fetched. The chain
goes on inside debootstrap: Release holds the Packages index's hash, which holds each .deb's.

Fingerprints are OpenPGP v4: SHA-1 over 0x99, the two-byte body length and the public-key packet
body (RFC 4880 section 12.2); parsing the packets here means gpg need not be installed.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator, Mapping
from pathlib import Path

#: The keys that sign bookworm's InRelease (gpgv's VALIDSIG lines on 2026-11-27, the same three
#: that https://ftp-master.debian.org/keys.html lists for these roles).
PINNED: Mapping[str, str] = {
    "B8B80B5B623EAB6AD8775C45B7C5D7D6350947F8": "Debian Archive Automatic Signing Key (12/bookworm)",
    "4D64FEC119C2029067D6E791F8D2585B8783D481": "Debian Stable Release Key (12/bookworm)",
    "04B54C3CDCA79751B16BC6B5225629DF75B188BD": "Debian Archive Automatic Signing Key (13/trixie)",
}
#: Where Debian's debian-archive-keyring package puts the full keyring.
HOST_KEYRING = Path("/usr/share/keyrings/debian-archive-keyring.gpg")

_PUBLIC_KEY = 6  # packet tag of a primary key; every other packet belongs to the key before it


class KeyringError(RuntimeError):
    """The host keyring is unreadable or lacks a pinned key; the message names what is missing."""


def _packets(data: bytes) -> Iterator[tuple[int, int, int, int]]:
    """(tag, start of the packet, start of its body, end) for each packet, in either header format."""
    pos = 0
    while pos < len(data):
        start, first = pos, data[pos]
        if not first & 0x80:
            raise KeyringError(f"not an OpenPGP keyring: byte {pos} is no packet header")
        if first & 0x40:  # new format
            tag, octet = first & 0x3F, data[pos + 1]
            if octet < 192:
                length, pos = octet, pos + 2
            elif octet < 224:
                length, pos = ((octet - 192) << 8) + data[pos + 2] + 192, pos + 3
            elif octet == 255:
                length, pos = int.from_bytes(data[pos + 2 : pos + 6], "big"), pos + 6
            else:
                raise KeyringError("partial-length packets do not occur in keyrings")
        else:  # old format
            tag, kind = (first >> 2) & 0x0F, first & 0x03
            if kind == 3:
                raise KeyringError("indeterminate-length packets do not occur in keyrings")
            size = 1 << kind
            length, pos = int.from_bytes(data[pos + 1 : pos + 1 + size], "big"), pos + 1 + size
        if pos + length > len(data):
            raise KeyringError("truncated OpenPGP keyring")
        yield tag, start, pos, pos + length
        pos += length


def fingerprint(body: bytes) -> str:
    """The v4 fingerprint of a public-key packet body, upper-case hex."""
    return hashlib.sha1(b"\x99" + len(body).to_bytes(2, "big") + body, usedforsecurity=False).hexdigest().upper()


def keys(data: bytes) -> dict[str, bytes]:
    """Each v4 primary key's fingerprint -> its transferable key (all its packets), in file order."""
    found: dict[str, bytes] = {}
    current: str | None = None
    begin = 0
    for tag, start, body, end in _packets(data):
        if tag == _PUBLIC_KEY:
            if current is not None:
                found[current] = data[begin:start]
            current, begin = (fingerprint(data[body:end]) if data[body] == 4 else None), start
    if current is not None:
        found[current] = data[begin:]
    return found


def pinned_keyring(source: bytes, pinned: Mapping[str, str] = PINNED) -> bytes:
    """The pinned keys out of `source`, concatenated: a keyring gpgv reads; refuses a missing key."""
    available = keys(source)
    missing = [f"{fpr} ({name})" for fpr, name in pinned.items() if fpr not in available]
    if missing:
        raise KeyringError(
            "the host's Debian archive keyring lacks pinned key(s) "
            + ", ".join(missing)
            + "; reinstall debian-archive-keyring (apt-get install --reinstall debian-archive-keyring) "
            "or, if Debian rotated its keys, update e2e/debkeys.py PINNED from https://ftp-master.debian.org/keys.html"
        )
    return b"".join(available[fpr] for fpr in pinned)


def write_pinned_keyring(out: Path, *, source: Path = HOST_KEYRING) -> Path:
    """Write the pinned keyring from the host's to `out`; returns `out`."""
    try:
        data = source.read_bytes()
    except OSError as exc:
        raise KeyringError(f"cannot read {source} ({exc.strerror}): apt-get install debian-archive-keyring") from exc
    out.write_bytes(pinned_keyring(data))
    return out
