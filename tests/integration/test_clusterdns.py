"""The real node's cluster DNS (e2e/clusterdns.py) answers a resolver's queries over UDP as CoreDNS's
kubernetes plugin would for Services: A records, NXDOMAIN for unknown cluster names so the search list
is walked, nothing for the outside world."""

from __future__ import annotations

import socket
import struct
import sys
import threading
from pathlib import Path

import pytest

E2E_DIR = Path(__file__).resolve().parents[2] / "e2e"
if str(E2E_DIR) not in sys.path:
    sys.path.insert(0, str(E2E_DIR))

import clusterdns  # noqa: E402

SERVICES = {"kubernetes.default.svc.cluster.local": "10.96.0.1"}


def query(name: str, qtype: int, ident: int = 0x1234) -> bytes:
    labels = b"".join(bytes([len(p)]) + p.encode() for p in name.split("."))
    return struct.pack("!HHHHHH", ident, 0x0100, 1, 0, 0, 0) + labels + b"\0" + struct.pack("!HH", qtype, 1)


@pytest.fixture(scope="module")
def server() -> tuple[str, int]:
    probe = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    probe.bind(("127.0.0.1", 0))
    port = probe.getsockname()[1]
    probe.close()
    threading.Thread(target=clusterdns.serve, args=(f"127.0.0.1:{port}", SERVICES.get), daemon=True).start()
    return "127.0.0.1", port


def ask(server: tuple[str, int], packet: bytes) -> tuple[int, int, int, bytes]:
    """(id, rcode, answer count, the answer's address or b"")."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.settimeout(2)
        for _ in range(20):  # the server thread may still be binding
            s.sendto(packet, server)
            try:
                reply = s.recv(512)
                break
            except TimeoutError:
                continue
        else:
            raise AssertionError("no answer")
    ident, flags, _qd, ancount = struct.unpack("!HHHH", reply[:8])
    return ident, flags & 0xF, ancount, reply[-4:] if ancount else b""


@pytest.mark.parametrize(
    ("name", "qtype", "rcode", "address"),
    [
        pytest.param("kubernetes.default.svc.cluster.local", 1, 0, "10.96.0.1", id="a service's A record"),
        pytest.param("Kubernetes.Default.SVC.cluster.local", 1, 0, "10.96.0.1", id="names are case-insensitive"),
        pytest.param("kubernetes.default.svc.cluster.local", 28, 0, None, id="AAAA: known, no address"),
        pytest.param("kubernetes.default.svc.kueue-system.svc.cluster.local", 1, 3, None, id="search suffix: NXDOMAIN"),
        pytest.param("example.com", 1, 5, None, id="outside the cluster domain: refused"),
    ],
)
def test_answers(server: tuple[str, int], name: str, qtype: int, rcode: int, address: str | None) -> None:
    ident, got_rcode, ancount, addr = ask(server, query(name, qtype))
    assert (ident, got_rcode) == (0x1234, rcode)
    assert ancount == (1 if address else 0)
    if address:
        assert socket.inet_ntoa(addr) == address


def test_a_malformed_query_gets_a_format_error(server: tuple[str, int]) -> None:
    ident, rcode, ancount, _ = ask(server, struct.pack("!HHHHHH", 7, 0x0100, 2, 0, 0, 0))
    assert (ident, rcode, ancount) == (7, 1, 0)
