"""Python source for the instructions (SWAP NEG INC DEC FLIP ROT IROT HADAMARD), from
the registry's rules (Note [Instruction rules], rlang/primitives.py).

`write_instr(writer, stmt)` evaluates the places of an `ir.Instr` into temporaries,
runs the instruction's forward rule on `TextNumber`s (source text whose operators
write rev's arithmetic for their type: wrapped integers, f32 rounded after each
operation, f64 products unfused by `fmul`, Note [No fused multiply-add],
backends/cuda/device.py), evaluates the results into temporaries, and only then
stores them, so that no result reads a place already written.
"""
from __future__ import annotations

from ...ir import nodes as ir
from ...primitives import INSTRUCTION_TABLE


class TextNumber:
    """A Python expression of scalar type `t`."""

    __slots__ = ("writer", "text", "t")

    def __init__(self, writer, text: str, t: str):
        self.writer, self.text, self.t = writer, text, t

    def _other(self, other) -> str:
        if isinstance(other, TextNumber):
            return other.text
        return repr(float(other)) if self.t in ("f32", "f64") else repr(other)

    def _additive(self, op: str, other):
        x, y = self.text, self._other(other)
        if self.t == "f64":
            return TextNumber(self.writer, f"({x} {op} {y})", "f64")
        if self.t == "f32":
            return TextNumber(self.writer, f"r32(f64({x}) {op} {y})", "f32")
        return TextNumber(self.writer, self.writer.wrap(f"({x} {op} {y})", self.t), self.t)

    def __add__(self, other):
        return self._additive("+", other)

    def __sub__(self, other):
        return self._additive("-", other)

    def __mul__(self, other):
        if self.t != "f64":
            raise TypeError(f"instruction rules multiply f64 values only, not {self.t}")
        return TextNumber(self.writer, f"fmul({self.text}, {self._other(other)})", "f64")

    def __neg__(self):
        text = f"(-{self.text})"
        return TextNumber(self.writer, text if self.t == "f64" else
                          self.writer.wrap(text, self.t), self.t)


class TextVocabulary:
    """`v` of the rules: cos and sin by the device helpers, each evaluated once into
    a temporary; 1 of a fixed is its raw ONE_RAW."""

    def __init__(self, writer):
        self.writer = writer

    def _helper(self, name: str, x: TextNumber) -> TextNumber:
        temp = self.writer.fresh(name[0])
        self.writer.emit(f"{temp} = b_{name}(f64({x.text}))")
        return TextNumber(self.writer, temp, "f64")

    def cos(self, x):
        return self._helper("cos", x)

    def sin(self, x):
        return self._helper("sin", x)

    def one(self, x):
        return TextNumber(self.writer, "ONE_RAW" if x.t == "fixed" else
                          "1.0" if x.t in ("f32", "f64") else "1", x.t)

    def not_(self, x):
        return TextNumber(self.writer, f"(not {x.text})", x.t)


def write_instr(writer, stmt: ir.Instr) -> None:
    """The source of one instruction statement, with its alias and bounds checks."""
    places = stmt.places
    index_lists = [None if isinstance(p, ir.VarPlace) else writer.indices_unchecked(p)
                   for p in places]
    if stmt.alias_site is not None:
        same = " and ".join(f"({a} == {b})" for a, b in zip(*index_lists))
        writer.fail_if(same, stmt.alias_site)
    for place, indices in zip(places, index_lists):
        if indices is not None and place.site is not None:
            for k, i in enumerate(indices):
                extent = f"{writer.name(place.var)}.shape[{k}]"
                writer.fail_if(f"not (0 <= {i} < {extent})", place.site + k, [i, extent])
    rule = INSTRUCTION_TABLE[stmt.name]
    t = places[0].type
    operands = []
    for place, indices in zip(places, index_lists):
        temp = writer.fresh("a")
        text = writer.place_text(place, indices)
        writer.emit(f"{temp} = f64({text})" if rule.in_f64 else f"{temp} = {text}")
        operands.append(TextNumber(writer, temp, "f64" if rule.in_f64 else t))
    if stmt.angle is not None:
        angle = writer.fresh("th")
        writer.emit(f"{angle} = {writer.value(stmt.angle)}")
        operands.append(TextNumber(writer, angle, "f64"))
    results = []
    for result in rule.apply(TextVocabulary(writer), *operands):
        if result.text in (o.text for o in operands):      # moved (SWAP): as it was
            results.append(result.text)
            continue
        temp = writer.fresh("n")
        writer.emit(f"{temp} = {result.text}")
        results.append(f"r32({temp})" if rule.in_f64 and t == "f32" else temp)
    for place, indices, value in zip(places, index_lists, results):
        writer.claim(place, indices)
        writer.store(place, indices, value)
