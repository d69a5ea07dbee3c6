"""The names and addresses other machines reach this one by: its host name, its fully qualified
name, what those resolve to, and the addresses of its network interfaces. A server listening on
every address (0.0.0.0, [::]) answers to these as its own (SPEC section 12).

Read once, when the server starts; Linux's tables give every address (elsewhere, the host name
and what it resolves to). Addresses gained later, and names only a DNS server elsewhere knows
(or a proxy in front), belong in http.public_names.
"""

from __future__ import annotations

import fcntl
import ipaddress
import socket
import struct
from itertools import pairwise
from pathlib import Path

_SIOCGIFADDR = 0x8915  # Linux: the (first) IPv4 address of one interface
_IPV4_ROUTES = Path("/proc/net/fib_trie")  # Linux: every IPv4 address, secondary ones too
_IPV6_TABLE = Path("/proc/net/if_inet6")  # Linux: every IPv6 address, one a line


def machine_names() -> set[str]:
    host = socket.gethostname()
    names = {host, _fqdn(host)}
    addresses = _resolved(host) | _ipv4() | _ipv4_routes() | _ipv6()
    return {name for name in names | addresses if name}


def _fqdn(host: str) -> str:
    try:
        return socket.getfqdn(host)
    except (OSError, UnicodeError):
        return ""


def _resolved(host: str) -> set[str]:
    try:
        found = socket.getaddrinfo(host, None)
    except (OSError, UnicodeError):  # a name no resolver knows
        return set()
    return {str(address[4][0]) for address in found}


def _ipv4() -> set[str]:
    try:
        interfaces = [name for _, name in socket.if_nameindex()]
    except OSError:
        return set()
    found: set[str] = set()
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        for name in interfaces:
            request = struct.pack("256s", name.encode()[:15])
            try:
                answer = fcntl.ioctl(probe.fileno(), _SIOCGIFADDR, request)
            except OSError:  # no IPv4 address on it, or not Linux
                continue
            found.add(socket.inet_ntoa(answer[20:24]))
    return found


def _ipv4_routes() -> set[str]:
    """The machine's own IPv4 addresses: in the routing table, each is a line `|-- ADDRESS`
    followed by `/32 host LOCAL`."""
    try:
        lines = _IPV4_ROUTES.read_text(encoding="ascii").splitlines()
    except (OSError, UnicodeDecodeError):
        return set()
    return {
        line.split("|--", 1)[1].strip()
        for line, following in pairwise(lines)
        if "|--" in line and following.strip() == "/32 host LOCAL"
    }


def _ipv6() -> set[str]:
    try:
        lines = _IPV6_TABLE.read_text(encoding="ascii").splitlines()
    except (OSError, UnicodeDecodeError):
        return set()
    found: set[str] = set()
    for line in lines:
        fields = line.split()
        try:
            found.add(str(ipaddress.IPv6Address(bytes.fromhex(fields[0]))))
        except (IndexError, ValueError):
            continue
    return found
