"""The machine's own names and addresses, as a server on 0.0.0.0 answers to them: what a user
reads with `hostname`, `hostname -f` and `hostname -I`."""

from __future__ import annotations

import ipaddress
import shutil
import socket
import subprocess

import pytest

from feedbackd.edges.hostnames import machine_names


def test_the_host_name_and_its_full_name_are_among_them() -> None:
    names = machine_names()
    assert socket.gethostname() in names
    assert socket.getfqdn() in names


@pytest.mark.skipif(shutil.which("hostname") is None, reason="needs the hostname command")
def test_every_address_of_the_machine_is_among_them() -> None:
    shown = subprocess.run(["hostname", "-I"], capture_output=True, text=True, check=True)
    addresses = {str(ipaddress.ip_address(a.split("%")[0])) for a in shown.stdout.split()}
    assert addresses <= machine_names()
