"""Each provider's own judge of a webhook delivery: the provider's official library where it has one,
called as its documentation tells a receiver to call it, else a few lines written from the provider's
documentation (gitlab, zoom, twitch; independent of hookbench's own Rust code).

    judge(provider, key, headers, body, url, now=None) -> (accepted, reason)

`key` is what the receiver holds (the secret; for sendgrid and discord the public key), `headers` a
case-insensitive mapping (http.client.HTTPMessage, as http.server hands a handler), `body` the raw
bytes, `url` the URL the request was received at (twilio and square sign it). `reason` is None when
accepted, else the first line of the library's exception, its log message, or "<call> returned False".
`now` only reaches the linear helper (verify-linear.mjs mocks Date.now with it); verify.py mocks the
Python clocks itself. Used by verify.py (the vectors) and examples/receivers/providers/receiver.py.
Needs the packages of requirements.txt (run with .venv/bin/python after install.sh) and, for linear,
node with node_modules from `npm ci` here.

Where each rule lives (versions as pinned in requirements.txt / package-lock.json; paths under
.venv/lib/python3.11/site-packages/ or node_modules/):

- slack_sdk 3.48.0, slack_sdk/signature/__init__.py:
    line 52    is_valid_request lower-cases the header names itself (any casing works)
    line 69    `if abs(self.clock.now() - int(timestamp)) > 60 * 5: return False` (both ways, 300 s;
               the clock is checked BEFORE the signature)
    lines 86-89 `v0=` + hex HMAC-SHA256(secret, "v0:{ts}:{body}"), compared at line 75
- twilio 9.13.0, twilio/request_validator.py:
    lines 114-127 URL + for each sorted distinct param name, each sorted DISTINCT value: name+value;
               base64 HMAC-SHA1 (HMAC-SHA256 only when X-Twilio-Webhooks-Signature-Settings says so,
               lines 73-89)
    lines 171-191 tries the URL with and without its default port; no clock anywhere
- squareup 46.0.0.20260916, square/utils/webhooks_helper.py (the helper is `verify_signature`, in
  square.utils.webhooks_helper; there is no is_valid_webhook_event_signature in this version):
    lines 34-39 empty body -> False; empty key or URL -> ValueError
    lines 42-55 base64 HMAC-SHA256(key, notification_url + body) compared with the header; no clock
- paddle-python-sdk 1.16.1, paddle_billing/Notifications/Verifier.py:
    line 12    Verifier(maximum_variance=5)
    lines 31-32 env TEST_MODE=1 turns the clock check off (verify.py clears it)
    line 34    request.headers.get("Paddle-Signature"): the headers must be case-insensitive (a plain
               dict with hookbench's lower-case names finds nothing and refuses)
    lines 40-47 `now > int(timestamp + 5)` -> "Too much time has elapsed ..."; `int(timestamp - 5) > now`
               -> "The request timestamp is too far in the future" (logged at CRITICAL, returns False)
    PaddleSignature.py lines 41-52: `ts=`/`h1=` split on ";", any other key -> ValueError;
               lines 76-84: hex HMAC-SHA256(secret, "{ts}:{body}") against every h1
- sendgrid 6.12.5, sendgrid/helpers/eventwebhook/__init__.py:
    lines 31-32 the public key is base64 DER SubjectPublicKeyInfo, wrapped in PEM armour
    lines 48-56 ECDSA P-256/SHA-256 over (timestamp + payload); InvalidSignature -> False; no clock
- PyNaCl 1.6.2 (Discord's documented Python check, https://discord.com/developers/docs/interactions/overview#setting-up-an-endpoint-validating-security-request-headers):
    nacl/signing.py line 59 VerifyKey(bytes.fromhex(public_key)), line 98 .verify(timestamp + body,
    bytes.fromhex(sig)): nacl/bindings/crypto_sign.py line 325 raises BadSignatureError "Signature was
    forged or corrupt"; no clock
- @linear/sdk 98.0.0: see verify-linear.mjs (60 s both ways on the body's webhookTimestamp)
- gitlab, zoom, twitch: see their functions below.
"""

import hashlib
import hmac
import json
import logging
import os
import subprocess
import threading
import time
import types
from datetime import datetime, timezone
from importlib import metadata
from urllib.parse import parse_qs, parse_qsl, urlsplit

HERE = os.path.dirname(os.path.abspath(__file__))
PROVIDERS = ("slack", "twilio", "square", "paddle", "sendgrid", "discord", "linear", "gitlab", "zoom", "twitch")
# The package that judges each provider (PyPI distribution, or npm for linear), or the doc page.
LIBRARIES = {
    "slack": "slack_sdk", "twilio": "twilio", "square": "squareup", "paddle": "paddle-python-sdk",
    "sendgrid": "sendgrid", "discord": "PyNaCl", "linear": "@linear/sdk",
}
DOCS = {
    "gitlab": "https://docs.gitlab.com/user/project/integrations/webhooks/#validate-payloads-by-using-a-secret-token",
    "zoom": "https://developers.zoom.us/docs/api/webhooks/#verify-webhook-events",
    "twitch": "https://dev.twitch.tv/docs/eventsub/handling-webhook-events/#verifying-the-event-message",
}
TWITCH_MAX_AGE_S = 600


def library(provider):
    """'slack_sdk 3.48.0', '@linear/sdk 98.0.0', or 'docs <url>' for the providers without one."""
    name = LIBRARIES.get(provider)
    if name is None:
        return f"docs {DOCS[provider]}"
    if name.startswith("@"):
        try:
            with open(os.path.join(HERE, "node_modules", name, "package.json")) as f:
                return f"{name} {json.load(f)['version']}"
        except OSError:
            return f"{name} (not installed)"
    return f"{name} {metadata.version(name)}"


def first_line(e):
    text = str(e).strip() or type(e).__name__
    return text.splitlines()[0]


class FormParams(dict):
    """A parsed form body as twilio's RequestValidator.get_values wants it (request_validator.py
    lines 129-139): `getall` gives every value of a repeated name, as Flask's MultiDict does."""

    def __init__(self, pairs):
        super().__init__()
        for k, v in pairs:
            self.setdefault(k, []).append(v)

    def getall(self, name):
        return self[name]


class _PaddleLog(logging.Handler):
    """Keeps the last message paddle_billing logged on this thread: its Verifier says why it refused
    only in its log (Verifier.py lines 36, 43, 46; PaddleSignature.py line 86), and returns False."""

    local = threading.local()

    def emit(self, record):
        self.local.last = record.getMessage()


_paddle_log = _PaddleLog()
_paddle_log_attached = False


class _Node:
    """One long-lived `node verify-linear.mjs`, asked one JSON line at a time."""

    def __init__(self):
        self.lock = threading.Lock()
        self.proc = None

    def ask(self, request):
        line = json.dumps(request) + "\n"
        with self.lock:
            for _ in range(2):
                if self.proc is None or self.proc.poll() is not None:
                    self.proc = subprocess.Popen(
                        ["node", os.path.join(HERE, "verify-linear.mjs")], cwd=HERE, text=True,
                        stdin=subprocess.PIPE, stdout=subprocess.PIPE)
                try:
                    self.proc.stdin.write(line)
                    self.proc.stdin.flush()
                    answer = self.proc.stdout.readline()
                    if answer:
                        return json.loads(answer)
                except (BrokenPipeError, OSError):
                    pass
                self.proc = None
        raise RuntimeError("verify-linear.mjs did not answer (is node installed, and npm ci run?)")


_node = _Node()


def check_key(provider, key):
    """Raises ValueError when `key` cannot be the key a receiver of `provider` holds (a receiver
    calls it once at start, rather than refuse every delivery)."""
    if not key:
        raise ValueError("the key is empty")
    if provider == "sendgrid":
        from sendgrid.helpers.eventwebhook import EventWebhook
        EventWebhook(key)  # load_pem_public_key raises ValueError for a key that is not P-256 SPKI
    elif provider == "discord":
        from nacl.signing import VerifyKey
        try:
            VerifyKey(bytes.fromhex(key))
        except Exception as e:  # nacl's own ValueError subclass, or fromhex's
            raise ValueError(f"not the hex of a 32-byte Ed25519 public key: {first_line(e)}") from e


def judge(provider, key, headers, body, url, now=None):
    """(accepted, reason) as the provider's own judge decides."""
    try:
        return globals()["_" + provider](key, headers, body, url, now)
    except KeyError as e:
        if provider not in PROVIDERS:
            raise ValueError(f"unknown provider {provider!r}") from e
        raise


def _refused(reason):
    return False, reason


def _slack(key, headers, body, url, now):
    from slack_sdk.signature import SignatureVerifier
    try:
        ok = SignatureVerifier(key).is_valid_request(body, headers)
    except ValueError as e:  # int() of a timestamp that is not a number
        return _refused(f"{type(e).__name__}: {first_line(e)}")
    return (True, None) if ok else _refused("SignatureVerifier.is_valid_request returned False")


def _twilio(key, headers, body, url, now):
    from twilio.request_validator import RequestValidator, get_signature_algorithm
    signature = headers.get("x-twilio-signature")
    if signature is None:
        return _refused("no X-Twilio-Signature header")
    # A JSON body is signed through its hash in the URL (bodySHA256): RequestValidator takes the
    # raw body as a string then, and compares its hash before the signature over the whole URL.
    if "bodySHA256" in parse_qs(urlsplit(url).query):
        params = body.decode("utf-8")
    else:
        params = FormParams(parse_qsl(body.decode("utf-8"), keep_blank_values=True))
    algorithm = get_signature_algorithm(headers.get("x-twilio-webhooks-signature-settings"))
    ok = RequestValidator(key).validate(url, params, signature, algorithm)
    return (True, None) if ok else _refused("RequestValidator.validate returned False")


def _square(key, headers, body, url, now):
    from square.utils.webhooks_helper import verify_signature
    signature = headers.get("x-square-hmacsha256-signature")
    if signature is None:
        return _refused("no x-square-hmacsha256-signature header")
    ok = verify_signature(request_body=body.decode("utf-8"), signature_header=signature,
                          signature_key=key, notification_url=url)
    return (True, None) if ok else _refused("verify_signature returned False")


def _paddle(key, headers, body, url, now):
    global _paddle_log_attached
    from paddle_billing.Notifications import Secret, Verifier
    if not _paddle_log_attached:
        from paddle_billing.Logger import get_logger
        get_logger().addHandler(_paddle_log)  # after paddle's own set-up (Logger/__init__.py lines 18-28)
        _paddle_log_attached = True
    _paddle_log.local.last = None
    request = types.SimpleNamespace(body=body, headers=headers)
    try:
        ok = Verifier().verify(request, Secret(key))
    except (ValueError, ConnectionRefusedError) as e:
        return _refused(f"{type(e).__name__}: {first_line(e)}")
    if ok:
        return True, None
    return _refused(_paddle_log.local.last or "Verifier.verify returned False")


def _sendgrid(key, headers, body, url, now):
    from sendgrid.helpers.eventwebhook import EventWebhook
    from sendgrid.helpers.eventwebhook.eventwebhook_header import EventWebhookHeader
    signature = headers.get(EventWebhookHeader.SIGNATURE)
    timestamp = headers.get(EventWebhookHeader.TIMESTAMP)
    if signature is None or timestamp is None:
        return _refused("no X-Twilio-Email-Event-Webhook-Signature or -Timestamp header")
    try:
        ok = EventWebhook(key).verify_signature(body.decode("utf-8"), signature, timestamp)
    except ValueError as e:  # a signature that is not base64, or not DER
        return _refused(f"{type(e).__name__}: {first_line(e)}")
    return (True, None) if ok else _refused("EventWebhook.verify_signature returned False")


def _discord(key, headers, body, url, now):
    from nacl.exceptions import BadSignatureError
    from nacl.signing import VerifyKey
    signature = headers.get("x-signature-ed25519")
    timestamp = headers.get("x-signature-timestamp")
    if signature is None or timestamp is None:
        return _refused("no X-Signature-Ed25519 or X-Signature-Timestamp header")
    try:
        VerifyKey(bytes.fromhex(key)).verify(timestamp.encode() + body, bytes.fromhex(signature))
    except (BadSignatureError, ValueError) as e:
        return _refused(f"{type(e).__name__}: {first_line(e)}")
    return True, None


def _linear(key, headers, body, url, now):
    import base64
    signature = headers.get("linear-signature")
    if signature is None:
        return _refused("no linear-signature header")
    request = {"secret": key, "body_b64": base64.b64encode(body).decode(), "signature": signature}
    if now is not None:
        request["now_ms"] = int(now * 1000)
    answer = _node.ask(request)
    return (True, None) if answer["accepted"] else _refused(answer["error"])


def _gitlab(key, headers, body, url, now):
    # GitLab's docs (DOCS["gitlab"]): GitLab sends the hook's secret token itself in X-Gitlab-Token;
    # the receiver compares it with the one it holds. Nothing is signed and there is no timestamp.
    token = headers.get("x-gitlab-token")
    if token is None:
        return _refused("no X-Gitlab-Token header")
    if not hmac.compare_digest(token.encode(), key.encode()):
        return _refused("X-Gitlab-Token does not match the secret token")
    return True, None


def _zoom(key, headers, body, url, now):
    # Zoom's docs (DOCS["zoom"]): message = "v0:" + x-zm-request-timestamp + ":" + raw body;
    # x-zm-signature must equal "v0=" + hex HMAC-SHA256(secret token, message). The page names the
    # timestamp as a guard against replays but gives no window, and Zoom's official sample
    # (github.com/zoom/webhook-sample, index.js) compares it with no clock: neither does this
    # judge, so a receiver written from either is never expected to refuse an old delivery.
    signature = headers.get("x-zm-signature")
    timestamp = headers.get("x-zm-request-timestamp")
    if signature is None or timestamp is None:
        return _refused("no x-zm-signature or x-zm-request-timestamp header")
    message = b"v0:" + timestamp.encode() + b":" + body
    expected = "v0=" + hmac.new(key.encode(), message, hashlib.sha256).hexdigest()
    if not hmac.compare_digest(expected.encode(), signature.encode()):
        return _refused("x-zm-signature does not match")
    return True, None


def _twitch(key, headers, body, url, now):
    # Twitch's docs (DOCS["twitch"]): hmac_message = message id + message timestamp + raw body;
    # Twitch-Eventsub-Message-Signature must equal "sha256=" + hex HMAC-SHA256(secret, hmac_message).
    # "Guarding against replay attacks" (https://dev.twitch.tv/docs/eventsub/#guarding-against-replay-attacks):
    # refuse a message whose timestamp is older than 10 minutes. The docs say nothing of timestamps
    # in the future, so none is refused for that. The timestamp is RFC3339 with up to nanoseconds.
    message_id = headers.get("twitch-eventsub-message-id")
    timestamp = headers.get("twitch-eventsub-message-timestamp")
    signature = headers.get("twitch-eventsub-message-signature")
    if message_id is None or timestamp is None or signature is None:
        return _refused("no Twitch-Eventsub-Message-Id, -Timestamp or -Signature header")
    message = message_id.encode() + timestamp.encode() + body
    expected = "sha256=" + hmac.new(key.encode(), message, hashlib.sha256).hexdigest()
    if not hmac.compare_digest(expected.encode(), signature.encode()):
        return _refused("Twitch-Eventsub-Message-Signature does not match")
    try:
        sent = datetime.fromisoformat(timestamp.replace("Z", "+00:00"))
    except ValueError:
        return _refused("Twitch-Eventsub-Message-Timestamp is not RFC3339")
    if sent.tzinfo is None:
        sent = sent.replace(tzinfo=timezone.utc)
    if time.time() - sent.timestamp() > TWITCH_MAX_AGE_S:
        return _refused("Twitch-Eventsub-Message-Timestamp is older than 10 minutes")
    return True, None
