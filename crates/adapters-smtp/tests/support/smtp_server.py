"""A test SMTP server (aiosmtpd) for payoutd's SMTP notifier tests.

Listens on 127.0.0.1:PORT and writes each message it accepts to OUT/<n>.json (written under a
dot name, then renamed) with its envelope, whether the session authenticated and used TLS, and
the raw message. Prints READY once it accepts connections, then serves until killed.

Options: --user/--password require AUTH with these credentials; --cert/--key offer STARTTLS
(and require it); --reject ADDRESS answers 550 to that recipient, --defer ADDRESS 451.
"""

import argparse
import json
import logging
import os
import signal
import ssl
import sys
import warnings

from aiosmtpd.controller import Controller
from aiosmtpd.smtp import AuthResult, LoginPassword

parser = argparse.ArgumentParser()
parser.add_argument("--port", type=int, required=True)
parser.add_argument("--out", required=True)
parser.add_argument("--user")
parser.add_argument("--password")
parser.add_argument("--cert")
parser.add_argument("--key")
parser.add_argument("--reject", action="append", default=[])
parser.add_argument("--defer", action="append", default=[])
args = parser.parse_args()

# Refused handshakes and AUTH without TLS are what some tests do on purpose: keep quiet.
logging.getLogger("mail.log").setLevel(logging.CRITICAL)
warnings.simplefilter("ignore")


class Handler:
    def __init__(self):
        self.count = 0

    async def handle_RCPT(self, server, session, envelope, address, rcpt_options):
        if address in args.reject:
            return "550 5.1.1 <%s>: mailbox unavailable" % address
        if address in args.defer:
            return "451 4.3.0 try again later"
        envelope.rcpt_tos.append(address)
        return "250 OK"

    async def handle_DATA(self, server, session, envelope):
        self.count += 1
        record = {
            "mail_from": envelope.mail_from,
            "rcpt_tos": envelope.rcpt_tos,
            "authenticated": bool(session.authenticated),
            "tls": session.ssl is not None,
            "data": envelope.original_content.decode("utf-8", "replace"),
        }
        temporary = os.path.join(args.out, ".%d.json" % self.count)
        with open(temporary, "w", encoding="utf-8") as f:
            json.dump(record, f)
        os.rename(temporary, os.path.join(args.out, "%d.json" % self.count))
        return "250 Message accepted for delivery"


def authenticator(server, session, envelope, mechanism, auth_data):
    ok = (
        isinstance(auth_data, LoginPassword)
        and auth_data.login == args.user.encode()
        and auth_data.password == args.password.encode()
    )
    # Not "handled": on failure the server answers 535 itself.
    return AuthResult(success=ok, handled=False)


kwargs = {}
if args.cert:
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(args.cert, args.key)
    kwargs.update(tls_context=context, require_starttls=True)
if args.user:
    kwargs.update(
        authenticator=authenticator,
        auth_required=True,
        auth_require_tls=bool(args.cert),
    )

controller = Controller(Handler(), hostname="127.0.0.1", port=args.port, **kwargs)
controller.start()
print("READY", flush=True)
signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
try:
    signal.pause()
finally:
    controller.stop()
