#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Run QEMU human monitor (HMP) commands through a guest's QMP socket.

usage: qemu/qmp.py SOCKET COMMAND...

Each COMMAND is one HMP command line ("info lapic 0", "nmi"); its output is
printed under a "### COMMAND" header. Exits 1 if the socket cannot be reached
or QEMU rejects a command, after running the others.
"""

import json
import socket
import sys


class Qmp:
    def __init__(self, path, timeout=20.0):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(timeout)
        self.sock.connect(path)
        self.buf = b""
        greeting = self._read()
        if "QMP" not in greeting:
            raise RuntimeError(f"no QMP greeting: {greeting}")
        self.execute("qmp_capabilities")

    def _read(self):
        while b"\n" not in self.buf:
            chunk = self.sock.recv(65536)
            if not chunk:
                raise RuntimeError("QMP socket closed")
            self.buf += chunk
        line, self.buf = self.buf.split(b"\n", 1)
        return json.loads(line)

    def execute(self, command, **arguments):
        msg = {"execute": command}
        if arguments:
            msg["arguments"] = arguments
        self.sock.sendall(json.dumps(msg).encode() + b"\n")
        while True:
            reply = self._read()
            if "event" in reply:
                continue
            if "error" in reply:
                raise RuntimeError(reply["error"].get("desc", str(reply)))
            return reply.get("return")

    def hmp(self, line):
        return self.execute("human-monitor-command", **{"command-line": line})


def main(argv):
    if len(argv) < 3:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    try:
        qmp = Qmp(argv[1])
    except (OSError, RuntimeError) as err:
        print(f"qmp.py: cannot talk to QEMU at {argv[1]}: {err}", file=sys.stderr)
        return 1
    status = 0
    for line in argv[2:]:
        print(f"### {line}")
        try:
            print(qmp.hmp(line), end="", flush=True)
        except (OSError, RuntimeError) as err:
            print(f"qmp.py: '{line}' failed: {err}")
            status = 1
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv))
