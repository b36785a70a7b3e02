#!/usr/bin/env python3
"""Static HTTPS file server for hct's end-to-end tests (stdlib + openssl CLI).

    https_server.py ROOT STATE_DIR

Makes a throwaway CA and a server certificate for 127.0.0.1 / localhost in
STATE_DIR (ca.pem, server.pem, server.key) with the `openssl` command, serves
ROOT on https://127.0.0.1:<random port>/ and prints one JSON line to stdout:
{"port": N, "ca": "STATE_DIR/ca.pem"}. Requests are logged to
STATE_DIR/access.log. Serves until its standard input is closed (so it also
stops when the test process that started it dies), then exits.
"""

import functools
import http.server
import json
import ssl
import subprocess
import sys
import threading
from pathlib import Path


def openssl(*args: str) -> None:
    subprocess.run(["openssl", *args], check=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


def make_certs(state: Path) -> tuple[Path, Path, Path]:
    ca_key, ca = state / "ca.key", state / "ca.pem"
    key, csr, cert = state / "server.key", state / "server.csr", state / "server.pem"
    ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
    openssl("req", "-x509", *ec, "-keyout", str(ca_key), "-out", str(ca), "-days", "2",
            "-subj", "/CN=hct test CA",
            "-addext", "basicConstraints=critical,CA:TRUE",
            "-addext", "keyUsage=critical,keyCertSign,cRLSign")
    openssl("req", "-new", *ec, "-keyout", str(key), "-out", str(csr), "-subj", "/CN=localhost")
    ext = state / "server.ext"
    ext.write_text(
        "basicConstraints=critical,CA:FALSE\n"
        "keyUsage=critical,digitalSignature\n"
        "extendedKeyUsage=serverAuth\n"
        "subjectAltName=IP:127.0.0.1,DNS:localhost\n"
    )
    openssl("x509", "-req", "-in", str(csr), "-CA", str(ca), "-CAkey", str(ca_key),
            "-CAcreateserial", "-days", "2", "-extfile", str(ext), "-out", str(cert))
    return ca, cert, key


class Handler(http.server.SimpleHTTPRequestHandler):
    log_file = None

    def log_message(self, format, *args):  # noqa: A002 (signature from the base class)
        self.log_file.write("%s %s\n" % (self.address_string(), format % args))
        self.log_file.flush()


def main() -> None:
    root, state = Path(sys.argv[1]).resolve(), Path(sys.argv[2]).resolve()
    state.mkdir(parents=True, exist_ok=True)
    ca, cert, key = make_certs(state)

    Handler.log_file = open(state / "access.log", "a")
    server = http.server.ThreadingHTTPServer(
        ("127.0.0.1", 0), functools.partial(Handler, directory=str(root)))
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(cert, key)
    server.socket = ctx.wrap_socket(server.socket, server_side=True)
    threading.Thread(target=server.serve_forever, daemon=True).start()

    print(json.dumps({"port": server.server_address[1], "ca": str(ca)}), flush=True)
    sys.stdin.read()  # returns at EOF: the parent closed our stdin or died
    server.shutdown()


if __name__ == "__main__":
    main()
