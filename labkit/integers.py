"""Given code several labs share: the check that an argument is an integer, and which one.

A length, a count, a size or a token id is an integer argument. The labs take it as a Python ``int``
or as a numpy integer of any width (``np.int32(9)``, ``np.int64(9)``: what indexing an array of
lengths hands back), and refuse

- a bool: Python counts ``True`` as the int 1, yet ``True`` passed as a length or a count is always
  a slip (a mask, or a flag in the wrong place), never a 1;
- an array or tensor, even of one number: on a GPU, reading a tensor's number waits for the device,
  a synchronization no check should hide (lab 02-04 refuses ``seq_len=torch.tensor(5)``); token ids
  taken out of a tensor are ``tensor.tolist()``;
- a float, even a whole one: ``16.0 == 16``, but a float size turns every count derived from it into
  a float and every index into a TypeError from deep inside numpy or a kernel.

The check hands the value back as a Python int, so that the arithmetic after it cannot wrap around in
a narrow numpy type (``np.int8(120) + 10`` is -126) and a kernel launch gets the plain int it expects.

Labs 02-01, 02-02, 02-04, 04-01, 04-03, 04-04, 04-05, 04-06, 04-07, 99-01 and 99-02 call :func:`as_int`
from their given code, each with its own name for the argument (``"paged_decode: num_splits"``). It
imports nothing but the standard library, so that a lab that needs no numpy can use it too.
"""

from __future__ import annotations

import numbers


def as_int(value, name: str, low: int | None = None, none_ok: bool = False) -> int | None:
    """``value`` as a Python int: an ``int`` or a numpy integer, not a bool, and ``>= low`` when
    ``low`` is given. With ``none_ok`` (an optional count), None comes back as None. Anything else
    is a ValueError whose message names ``name`` and says what it must be."""
    if value is None and none_ok:
        return None
    # numpy registers its integer types as numbers.Integral (and its bool and floats as not), so this
    # takes every numpy integer without importing numpy.
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or (low is not None and value < low):
        wanted = ("None or " if none_ok else "") + "an int" + ("" if low is None else f" >= {low}")
        raise ValueError(f"{name} must be {wanted}, got {value!r}")
    return int(value)
