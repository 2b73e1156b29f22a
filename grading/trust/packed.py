"""Per-item numbers held small until a product needs them, given back bit for bit.

A figure prepared over 100,000 responses holds its inputs until the shared bootstrap
product lays them out (``figures.SharedDraws``); as float64 that is 800 KB a number per
figure, and the trust report prepares dozens. Lengths in characters are whole numbers and a
verdict takes a few values: ``pack`` keeps whole numbers in the smallest integer type that
holds them and a few distinct values as one-byte codes into a table; ``unpack`` gives the
float64 values of a part back, bit for bit the ones packed (every integer below 2**31 and
every table entry is exactly a float64).
"""

from __future__ import annotations

from dataclasses import dataclass

CODED = 256  # distinct values up to which non-integers are kept as one-byte codes


@dataclass(frozen=True)
class Packed:
    stored: object  # integers, or codes into ``table``
    table: object | None = None  # the distinct values, when ``stored`` holds codes

    def __len__(self) -> int:
        return len(self.stored)

    def unpack(self, part=slice(None)):
        """float64 values of ``part`` (a slice or an array of indexes)."""
        import numpy as np

        found = self.stored[part]
        return (found.astype("float64") if self.table is None
                else np.asarray(self.table, dtype="float64")[found])


def pack(values) -> Packed:
    import numpy as np

    found = np.asarray(values, dtype="float64")
    if not len(found):
        return Packed(found)
    if np.any(np.signbit(found) & (found == 0)):  # -0.0: neither an integer nor a code
        return Packed(found)
    low, high = float(found.min()), float(found.max())
    if bool(np.all(np.isfinite(found)) and np.all(found == np.trunc(found))):
        for kind in ("int8", "int16", "int32"):
            info = np.iinfo(kind)
            if info.min <= low and high <= info.max:
                return Packed(found.astype(kind))
    distinct, codes = np.unique(found, return_inverse=True)
    if len(distinct) <= CODED and not np.isnan(distinct).any():
        return Packed(codes.astype("uint8"), distinct)
    return Packed(found)
