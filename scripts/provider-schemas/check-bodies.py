"""Holds hookbench's Paddle and Square bodies to the providers' own Python libraries.

    scripts/provider-vectors/.venv/bin/python scripts/provider-schemas/check-bodies.py BODIES.json

harness/tests/it/provider_bodies.rs writes BODIES.json (every provider's body of every type, as a
credit and as an update: [{provider, type, kind, content_type, body}], the body as its text) and
runs this. Paddle's:
paddle-python-sdk's `Event.from_dict` parses each notification into the entity its event type
names (not `UndefinedEntity`). Square's: squareup's pydantic model of each event type
(`PaymentCreatedEvent`, ...) validates it, and no key of it is one the model lacks (a made-up key
is found, so the check is not vacuous). The libraries are those scripts/provider-vectors/install.sh
installs (requirements.txt, versions pinned). The other eight providers publish no shape in a
library hookbench installs (slack_sdk, twilio, sendgrid and PyNaCl verify signatures only).
Exits 1 naming each problem.
"""

import importlib
import json
import sys

from paddle_billing.Entities.Event import Event
from paddle_billing.Notifications.Entities.UndefinedEntity import UndefinedEntity


def extras(model, path=""):
    """The keys a pydantic model kept as extra (ones it does not declare), recursively."""
    out = [f"{path}/{k}" for k in (getattr(model, "__pydantic_extra__", None) or {})]
    for name in getattr(type(model), "model_fields", {}):
        value = getattr(model, name, None)
        if hasattr(type(value), "model_fields"):
            out += extras(value, f"{path}/{name}")
    return out


def square_model(event_type):
    module = event_type.replace(".", "_") + "_event"
    name = "".join(part.capitalize() for part in module.split("_"))
    return getattr(importlib.import_module(f"square.types.{module}"), name)


def check(case):
    if case["provider"] not in ("paddle", "square"):
        return []
    body = json.loads(case["body"])
    what = f"{case['provider']} {case['type']} ({case['kind']})"
    if case["provider"] == "paddle":
        event = Event.from_dict(body)
        if isinstance(event.data, UndefinedEntity):
            return [f"{what}: paddle-python-sdk reads its data as no entity"]
        return []
    if case["provider"] == "square":
        model = square_model(case["type"]).model_validate(body)
        return [f"{what}: {key} is not in squareup's model" for key in extras(model)]
    return []


def main():
    cases = json.load(open(sys.argv[1], encoding="utf-8"))
    problems, checked = [], 0
    for case in cases:
        try:
            found = check(case)
        except Exception as e:  # a library's refusal, whatever its kind
            found = [f"{case['provider']} {case['type']} ({case['kind']}): {type(e).__name__}: {e}"]
        checked += case["provider"] in ("paddle", "square")
        problems += found
    # Not vacuous: a key Square does not declare is found.
    square = next(c for c in cases if c["provider"] == "square")
    broken = dict(square, body=json.dumps({**json.loads(square["body"]), "made_up": 1}))
    if not check(broken):
        problems.append("square: a made-up key went unnoticed (squareup's models keep no extras?)")
    for p in problems:
        print(p)
    print(f"{checked} Paddle and Square bodies checked, {len(problems)} problems")
    sys.exit(1 if problems or not checked else 0)


if __name__ == "__main__":
    main()
