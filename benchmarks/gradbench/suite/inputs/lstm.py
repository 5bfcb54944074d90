"""lstm's inputs: an l-layer LSTM's parameters and state, and a character sequence.

GradBench's eval takes the first c characters of a text (Shakespeare's sonnets),
writes each as its b = ceil(log2(largest code point)) bits, most significant
first (b = 14 there: the text has a typographic apostrophe, U+2019), and draws
the state and parameters uniform in [0, 1).  The text is not part of this
repository; `generate` writes c characters of its own (lower-case words,
punctuation, line breaks and that apostrophe) the same way, so the shapes and
the kind of bit patterns are the eval's.

Note [Bits of a character]
~~~~~~~~~~~~~~~~~~~~~~~~~~
A character c becomes the row of the b binary digits of ord(c), most
significant first; b is taken from the largest code point of the text, so
every row has a leading zero or more for ordinary letters.
"""

import math

import numpy as np

SIZES = {"small": {"l": 2, "c": 8}, "default": {"l": 4, "c": 1024}}

_LETTERS = "etaoinshrdlcumwfgypbvkjxqz"
_PUNCTUATION = [",", ".", ";", ":", "!", "?", "\u2019"]


def _text(rng: np.random.Generator, c: int) -> str:
    """c characters of made-up verse: words of 1-9 letters, spaces, punctuation,
    line breaks, and at least one U+2019 (so that b is the eval's 14)."""
    out: list[str] = []
    while len(out) < c:
        out.extend(rng.choice(list(_LETTERS), size=int(rng.integers(1, 10))))
        roll = rng.random()
        if roll < 0.15:
            out.append(str(rng.choice(_PUNCTUATION)))
        out.append("\n" if roll > 0.9 else " ")
    out[int(rng.integers(0, c))] = "\u2019"
    return "".join(out[:c])


def char_bits(text: str) -> int:
    """b: the bits of the largest code point of `text` (Note [Bits of a character])."""
    return math.ceil(math.log2(max(ord(ch) for ch in text)))


def bit_rows(text: str, bits: int) -> list[list[float]]:
    """One row of `bits` binary digits (as floats) per character, most significant first."""
    return [[float((ord(ch) >> (bits - 1 - k)) & 1) for k in range(bits)] for ch in text]


def generate(*, seed: int = 0, l: int, c: int) -> dict:
    """The input ``{"main_params": [2l][4b], "extra_params": [3][b], "state": [2l][b],
    "sequence": [c][b]}`` for l layers and c characters."""
    rng = np.random.default_rng(seed)
    text = _text(rng, c)
    b = char_bits(text)
    return {
        "main_params": rng.random((2 * l, 4 * b)).tolist(),
        "extra_params": rng.random((3, b)).tolist(),
        "state": rng.random((2 * l, b)).tolist(),
        "sequence": bit_rows(text, b),
    }
