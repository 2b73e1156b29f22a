"""The trust report's judges' share (trust_judges.TrustJudges) as plain JSON and raw array
bytes, and back, value for value (issue 41: kept in the database, trust_share_store).

No pickle: the JSON holds numbers, strings, lists and tagged values only. Tags:
``{"$t": [...]}`` a tuple, ``{"$f": [...]}`` a frozenset, ``{"$d": [[key, value], ...]}`` a
dict (any keys, in order), ``{"$e": [class, value]}`` an enum member, ``{"$s": [dtype,
value]}`` a numpy scalar (kept as numpy: its repr is not a float's), ``{"$a": [dtype, shape,
offset, bytes]}`` a numpy array whose bytes are at ``offset`` in the arrays' blob, and
``{"$c": [class, {field: value}]}`` a dataclass. Only dataclasses and enums of this project's
``grading`` and ``storage.services`` packages are made back, with exactly the fields they
have now; anything else is an ``UnknownShape`` (the caller makes the share again).

Floats are written by ``repr`` (the shortest text that reads back to the same double, NaN
and infinities included), so every figure reads back bit for bit.
"""

from __future__ import annotations

import dataclasses
import enum
import importlib
import json

from storage.services.trust_frame import Frame, Positions
from storage.services.trust_judges import TrustJudges

_PACKAGES = ("grading.", "storage.services.")


class UnknownShape(ValueError):
    """Stored by other code: a class, field or tag this code does not know."""


def encode(share) -> tuple[str, bytearray]:
    """(JSON text, arrays' bytes) of ``share`` (a ``TrustJudges``, or any value made of the
    kinds above: the panel members' alpha too, member_alpha_store). A frame's positions are
    not written: they are its ids' positions, made again on reading. The arrays' bytes are
    copied once, into the blob (a bytearray: not each array's bytes and then their join,
    twice the arrays at the peak: ~10 MB of the app's after a grade at 100,000 responses)."""
    arrays: list = []
    offset = [0]

    def array(value) -> dict:
        import numpy as np

        if value.dtype.hasobject:
            raise TypeError("an array of Python objects is not kept")
        contiguous = np.ascontiguousarray(value)  # the array itself when it is already
        found = {"$a": [value.dtype.str, list(value.shape), offset[0], contiguous.nbytes]}
        arrays.append(contiguous)
        offset[0] += contiguous.nbytes
        return found

    def plain(value):
        import numpy as np

        # numpy's float64 is a float and a str enum a str: both tagged before plain ones
        if isinstance(value, np.generic):
            return {"$s": [value.dtype.str, value.item()]}
        if isinstance(value, enum.Enum):
            return {"$e": [_name(type(value)), plain(value.value)]}
        if value is None or isinstance(value, (bool, int, float, str)):
            return value
        if isinstance(value, np.ndarray):
            return array(value)
        if isinstance(value, tuple):
            return {"$t": [plain(v) for v in value]}
        if isinstance(value, list):
            return [plain(v) for v in value]
        if isinstance(value, frozenset):
            return {"$f": [plain(v) for v in sorted(value)]}
        if isinstance(value, dict):
            return {"$d": [[plain(k), plain(v)] for k, v in value.items()]}
        if dataclasses.is_dataclass(value) and not isinstance(value, type):
            fields = {f.name: getattr(value, f.name) for f in dataclasses.fields(value)}
            if isinstance(value, Frame):
                fields["positions"] = None
            return {"$c": [_name(type(value)), {k: plain(v) for k, v in fields.items()}]}
        raise TypeError(f"cannot keep a {type(value).__name__} in the trust share")

    text = json.dumps(plain(share), separators=(",", ":"))
    import numpy as np

    blob, at = bytearray(offset[0]), 0
    into = np.frombuffer(blob, dtype=np.uint8)  # writes go to the blob itself
    for contiguous in arrays:
        into[at:at + contiguous.nbytes] = contiguous.reshape(-1).view(np.uint8)
        at += contiguous.nbytes
    del into  # a bytearray with a view on it cannot be resized
    return text, blob


def decode(text: str, blob: bytes = b""):
    """The value ``encode`` wrote; ``UnknownShape`` if this code does not know its shape."""
    import numpy as np

    def value(found):
        if isinstance(found, list):
            return [value(v) for v in found]
        if not isinstance(found, dict):
            return found
        if len(found) != 1:
            raise UnknownShape(f"a tag {sorted(found)}")
        (tag, body), = found.items()
        if tag == "$t":
            return tuple(value(v) for v in body)
        if tag == "$f":
            return frozenset(value(v) for v in body)
        if tag == "$d":
            return {value(k): value(v) for k, v in body}
        if tag == "$e":
            cls = _class(body[0])
            if not issubclass(cls, enum.Enum):
                raise UnknownShape(f"{body[0]} is not an enum")
            return cls(value(body[1]))
        if tag == "$s":
            return np.dtype(body[0]).type(body[1])
        if tag == "$a":
            dtype, shape, offset, size = body
            dtype = np.dtype(dtype)
            if dtype.hasobject:
                raise UnknownShape("an array of Python objects")
            flat = np.frombuffer(blob, dtype=dtype, count=size // dtype.itemsize,
                                 offset=offset)
            return flat.reshape(shape).copy()  # its own memory, writable, as made
        if tag == "$c":
            made = _dataclass(body[0], {k: value(v) for k, v in body[1].items()})
            if isinstance(made, Frame):
                made.positions = Positions(made.ids)
            return made
        raise UnknownShape(f"the tag {tag}")

    return value(json.loads(text))


def decode_share(text: str, blob: bytes) -> TrustJudges:
    """The trust share ``encode`` wrote; ``UnknownShape`` if it is not one this code knows."""
    share = decode(text, blob)
    if not isinstance(share, TrustJudges):
        raise UnknownShape("not a trust share")
    return share


def _name(cls: type) -> str:
    return f"{cls.__module__}:{cls.__qualname__}"


def _class(name: str) -> type:
    module, _, qualname = name.partition(":")
    if not module.startswith(_PACKAGES):
        raise UnknownShape(f"{name} is not this project's")
    try:
        found = importlib.import_module(module)
        for part in qualname.split("."):
            found = getattr(found, part)
    except (ImportError, AttributeError) as exc:
        raise UnknownShape(f"{name} is gone") from exc
    if not isinstance(found, type):
        raise UnknownShape(f"{name} is not a class")
    return found


def _dataclass(name: str, fields: dict):
    """The dataclass ``name`` with exactly these fields set as stored (its __init__ and
    __post_init__ not run again: the values are the ones it had)."""
    cls = _class(name)
    if not dataclasses.is_dataclass(cls):
        raise UnknownShape(f"{name} is not a dataclass")
    if {f.name for f in dataclasses.fields(cls)} != set(fields):
        raise UnknownShape(f"{name} has other fields now")
    made = object.__new__(cls)
    for key, found in fields.items():
        object.__setattr__(made, key, found)
    return made
