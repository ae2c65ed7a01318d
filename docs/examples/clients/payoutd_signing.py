import hashlib
import hmac
import time


def signing_hook(api_key: str, api_secret: str):
    """An httpx request hook that signs each request with v2 (docs/API.md, "Authentication")."""
    last_nonce = 0

    def sign(request):
        nonlocal last_nonce
        last_nonce = max(int(time.time() * 1000), last_nonce + 1)  # a POST nonce is single-use
        body_hash = hashlib.sha256(request.content).hexdigest()
        message = f"{last_nonce}.{api_key}.{request.method}.{request.url.raw_path.decode()}.{body_hash}"
        mac = hmac.new(api_secret.encode(), message.encode(), hashlib.sha256).hexdigest()
        request.headers["x-signature-version"] = "2"
        request.headers["signature"] = f"{last_nonce}.{mac}"

    return sign
