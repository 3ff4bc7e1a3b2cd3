"""A DNS server that answers nothing and records every question (reliability R13).

    dns_trap.py --log FILE --ready FILE [--address 127.0.0.1] [--port 53]

Listens on UDP ADDRESS:PORT; for each query appends "NAME TYPE" (e.g. "node-a.invalid A") to
--log and answers REFUSED, so that a resolver fails at once instead of waiting. Creates --ready
once it listens. Runs until SIGTERM or SIGKILL. Started inside a network namespace whose
/etc/resolv.conf names it, it shows whether anything there asked DNS a question.
"""
import argparse
import signal
import socket
import struct
import sys

QTYPES = {1: "A", 2: "NS", 5: "CNAME", 6: "SOA", 12: "PTR", 15: "MX", 16: "TXT", 28: "AAAA",
          33: "SRV", 65: "HTTPS"}
REFUSED = 5


def question(packet):
    """(name, type, end offset) of the first question of a DNS query packet."""
    labels, pos = [], 12
    while pos < len(packet) and packet[pos] != 0:
        length = packet[pos]
        labels.append(packet[pos + 1:pos + 1 + length].decode("ascii", "replace"))
        pos += 1 + length
    qtype = struct.unpack("!H", packet[pos + 1:pos + 3])[0] if pos + 3 <= len(packet) else 0
    return ".".join(labels), QTYPES.get(qtype, str(qtype)), pos + 5


def refusal(packet, end):
    """The query's header with QR set and RCODE REFUSED, and its question (packet[12:end])."""
    ident, flags = struct.unpack("!HH", packet[:4])
    flags = 0x8000 | (flags & 0x7900) | REFUSED  # QR; keep opcode and RD
    return struct.pack("!HHHHHH", ident, flags, 1, 0, 0, 0) + packet[12:end]


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--log", required=True)
    p.add_argument("--ready", required=True)
    p.add_argument("--address", default="127.0.0.1")
    p.add_argument("--port", type=int, default=53)
    args = p.parse_args()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.bind((args.address, args.port))
    open(args.ready, "w").close()
    with open(args.log, "a", encoding="utf-8") as log:
        while True:
            packet, peer = sock.recvfrom(4096)
            if len(packet) < 12:
                continue
            name, qtype, end = question(packet)
            log.write(f"{name} {qtype}\n")
            log.flush()
            sock.sendto(refusal(packet, end), peer)


if __name__ == "__main__":
    main()
