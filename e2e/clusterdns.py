#!/usr/bin/env python3
"""Cluster DNS for the real node: A records of Services, as CoreDNS's kubernetes plugin answers them.

No CoreDNS image can be fetched here (no registry), and pods on the real node reach the API and each
other by IP; but a kubeconfig naming `https://kubernetes.default.svc` (upstream's sequential specs mount
one into the manager) needs the name to resolve. This answers, over UDP on the node's address (the
kubelet's `clusterDNS`):

  <service>.<namespace>.svc.<domain>   A     the Service's ClusterIP (none for a headless one)
  anything else under <domain>         NXDOMAIN, so resolvers walk their search list
  AAAA / other types of a known name   NOERROR, no answer (IPv4-only cluster)
  names outside <domain>               REFUSED: nothing here resolves the outside world

Services come from the API (`kubectl get services -A`), read again when a name is not known or the
copy is older than a few seconds. Test infrastructure only (e2e/node.py starts it).

    python e2e/clusterdns.py --listen 10.245.255.1:53 --kubectl KUBECTL --kubeconfig FILE
"""

from __future__ import annotations

import argparse
import json
import socket
import struct
import subprocess
import sys
import time
from collections.abc import Callable, Mapping

DOMAIN = "cluster.local"
TTL_S = 5
REFRESH_S = 3.0
TYPE_A, TYPE_AAAA, CLASS_IN = 1, 28, 1
NOERROR, FORMERR, NXDOMAIN, REFUSED = 0, 1, 3, 5


def parse_question(packet: bytes) -> tuple[int, int, str, int, int] | None:
    """(id, flags, lower-case name, qtype, end offset of the question) of a one-question query."""
    if len(packet) < 12:
        return None
    ident, flags, qdcount = struct.unpack("!HHH", packet[:6])
    if qdcount != 1:
        return None
    labels, at = [], 12
    while True:
        if at >= len(packet):
            return None
        length = packet[at]
        at += 1
        if length == 0:
            break
        if length > 63 or at + length > len(packet):
            return None
        labels.append(packet[at : at + length].decode("ascii", "replace").lower())
        at += length
    if at + 4 > len(packet):
        return None
    qtype, qclass = struct.unpack("!HH", packet[at : at + 4])
    return ident, flags, ".".join(labels), qtype, at + 4 if qclass == CLASS_IN else -1


def answer(packet: bytes, lookup: Callable[[str], str | None], domain: str = DOMAIN) -> bytes | None:
    """The response to `packet`; `lookup(name)` gives a known name's IPv4 address, or None."""
    q = parse_question(packet)
    if q is None:
        return None if len(packet) < 12 else packet[:2] + struct.pack("!HHHHH", 0x8000 | FORMERR, 0, 0, 0, 0)
    ident, flags, name, qtype, end = q
    question = packet[12:end] if end > 0 else b""
    address: str | None = None
    if end < 0 or not (name == domain or name.endswith("." + domain)):
        rcode = REFUSED
    else:
        address = lookup(name)
        rcode = NOERROR if address is not None else NXDOMAIN
    records = b""
    if address is not None and qtype == TYPE_A:
        records = struct.pack("!HHHIH", 0xC00C, TYPE_A, CLASS_IN, TTL_S, 4) + socket.inet_aton(address)
    reply_flags = 0x8000 | 0x0400 | (flags & 0x0100) | rcode  # response, authoritative, recursion desired echoed
    header = struct.pack("!HHHHHH", ident, reply_flags, 1 if question else 0, 1 if records else 0, 0, 0)
    return header + question + records


class Services:
    """name -> ClusterIP of every Service with one, read from the API at most every REFRESH_S."""

    def __init__(self, kubectl: str, kubeconfig: str, domain: str = DOMAIN) -> None:
        self.cmd = [kubectl, f"--kubeconfig={kubeconfig}", "get", "services", "-A", "-o", "json"]
        self.domain = domain
        self.names: Mapping[str, str] = {}
        self.read_at = 0.0

    def _read(self) -> None:
        res = subprocess.run(self.cmd, capture_output=True, text=True, timeout=10, check=False)
        if res.returncode != 0:
            return
        names = {}
        for svc in json.loads(res.stdout)["items"]:
            ip = svc.get("spec", {}).get("clusterIP")
            if ip and ip != "None":
                meta = svc["metadata"]
                names[f"{meta['name']}.{meta['namespace']}.svc.{self.domain}"] = ip
        self.names, self.read_at = names, time.monotonic()

    def lookup(self, name: str) -> str | None:
        age = time.monotonic() - self.read_at
        if (name not in self.names and age > 0.5) or age > REFRESH_S:  # a burst of misses reads once
            self._read()
        return self.names.get(name)


def serve(listen: str, lookup: Callable[[str], str | None]) -> None:
    host, port = listen.rsplit(":", 1)
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.bind((host, int(port)))
    while True:
        packet, peer = sock.recvfrom(4096)
        reply = answer(packet, lookup)
        if reply is not None:
            sock.sendto(reply, peer)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--listen", required=True, help="address:port (the node's address, port 53)")
    parser.add_argument("--kubectl", required=True)
    parser.add_argument("--kubeconfig", required=True)
    args = parser.parse_args(argv)
    serve(args.listen, Services(args.kubectl, args.kubeconfig).lookup)
    return 0


if __name__ == "__main__":
    sys.exit(main())
