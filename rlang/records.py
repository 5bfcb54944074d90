"""Frozen records: the AST's and the IR's node classes.

`record(cls)` makes `cls` a frozen dataclass as far as its users can tell: the same
`__init__` (positional fields, defaults, `default_factory`, `kw_only`,
`__post_init__`), `__repr__`, `__eq__` and `__hash__` over the fields that `compare`,
assignment raising `dataclasses.FrozenInstanceError`, and `dataclasses.fields`,
`replace` and `is_dataclass` working on it.  It only costs less to define.

Note [Records compiled when first used]
~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
`dataclass(frozen=True)` writes the source of six methods per class and compiles each
with its own `exec`: importing `rlang.ir.nodes` (40 classes, 234 methods) took 30–50
ms, almost all of it compiling, and `rlang.frontend.ast` 25–30 ms.  The IR's import is
on the path of every compiled call of a fresh process, a call from the disk cache
included (issue #26 asks for such a first gradient in under 30 ms), and a call from
the cache builds no node at all.  So here nothing is compiled when a class is
defined:

- the bookkeeping `dataclass` does (the fields, as `dataclasses.fields` and
  `replace` read them, and `__match_args__`) is done here for the plain fields
  records have (`_fields_of`), at a fifth of `dataclass`'s cost, which had still
  been 4-5 ms of importing `rlang.ir.nodes`; a class with a `ClassVar`, an `InitVar`
  or `KW_ONLY` annotation is handed to `dataclass` for it;
- `__eq__`, `__hash__` and `__repr__` are shared by every record class and read a
  class's fields through `operator.attrgetter` (C code, as fast as the generated
  comparisons);
- `__init__` is the one method whose generated code is faster than a shared one
  (keyword and default handling), so each class's is generated as `dataclass` writes
  it, but only when the class's first instance is made (`_first_init`): a process
  compiles the constructors of the classes it uses, once;
- `__setattr__` and `__delattr__` raise `FrozenInstanceError`, as a frozen
  dataclass's do.
"""
from __future__ import annotations

import dataclasses
from dataclasses import MISSING, Field, FrozenInstanceError, dataclass, field, fields
from operator import attrgetter

__all__ = ["record"]


class _Factory:
    """The default of a parameter whose field has a `default_factory`."""

    def __repr__(self):
        return "<factory>"


_FACTORY = _Factory()


def _frozen_setattr(self, name, value):
    raise FrozenInstanceError(f"cannot assign to field {name!r}")


def _frozen_delattr(self, name):
    raise FrozenInstanceError(f"cannot delete field {name!r}")


def record(cls):
    """`cls` as a frozen dataclass (see the module docstring)."""
    if cls.__doc__ is None:                 # (dataclass would ask inspect.signature)
        cls.__doc__ = ""
    if not _fields_of(cls):
        cls = dataclass(cls, init=False, repr=False, eq=False)
    every = fields(cls)
    defaulted = False
    for f in every:
        if not f.kw_only:
            has_default = f.default is not MISSING or f.default_factory is not MISSING
            if defaulted and not has_default:
                raise TypeError(f"{cls.__name__}: non-default argument {f.name!r} "
                                "follows default argument")
            defaulted |= has_default
    compared = [f.name for f in every if f.compare]
    hashed = [f.name for f in every if (f.compare if f.hash is None else f.hash)]
    cls._compared_values = staticmethod(_values(compared))
    cls._hashed_values = staticmethod(_values(hashed))
    cls._shown_fields = tuple(f.name for f in every if f.repr)
    cls.__init__ = _first_init
    cls.__eq__, cls.__hash__, cls.__repr__ = _eq, _hash, _repr
    cls.__setattr__, cls.__delattr__ = _frozen_setattr, _frozen_delattr
    if not cls.__doc__:
        cls.__doc__ = f"{cls.__name__}({', '.join(f.name for f in every)})"
    return cls


@dataclass(frozen=True)
class _Frozen:
    """(Its parameters are every record's `__dataclass_params__`.)"""


#: Words of annotations whose fields `_fields_of` leaves to `dataclass`.
_SPECIAL = ("ClassVar", "InitVar", "KW_ONLY")


def _fields_of(cls) -> bool:
    """Give `cls` the fields `dataclass` would (`__dataclass_fields__`: its bases'
    then its own annotated names, each a `Field`, its class attribute the default),
    `__match_args__`, and a frozen dataclass's parameters; False, having changed nothing, where an annotation is not
    a plain one (a `ClassVar`, `InitVar` or `KW_ONLY`, or not a string or a class)."""
    own = cls.__dict__.get("__annotations__", {})
    if any(not isinstance(a, (str, type)) or (isinstance(a, str) and
                                                any(w in a for w in _SPECIAL))
           for a in own.values()):
        return False
    for name, value in cls.__dict__.items():
        if isinstance(value, Field) and name not in own:
            raise TypeError(f"{name!r} is a field but has no type annotation")
    found: dict = {}
    for base in reversed(cls.__mro__[1:]):
        found.update(base.__dict__.get("__dataclass_fields__", {}))
    for name, annotation in own.items():
        default = cls.__dict__.get(name, MISSING)
        made = default if isinstance(default, Field) else field(default=default)
        if made.default is not MISSING and made.default.__class__.__hash__ is None:
            raise ValueError(f"mutable default {type(made.default)} for field {name} is "
                             "not allowed: use default_factory")
        made.name, made.type = name, annotation
        made._field_type = dataclasses._FIELD
        if made.kw_only is MISSING:
            made.kw_only = False
        if isinstance(default, Field):
            if made.default is MISSING:
                delattr(cls, name)
            else:
                setattr(cls, name, made.default)
        found[name] = made
    cls.__dataclass_fields__ = found
    cls.__dataclass_params__ = _Frozen.__dataclass_params__
    if "__match_args__" not in cls.__dict__:
        cls.__match_args__ = tuple(f.name for f in found.values()
                                   if f.init and not f.kw_only)
    return True


def _values(names: list):
    """A function of a record giving the tuple of its fields `names`."""
    if not names:
        return lambda record: ()
    if len(names) == 1:
        name = names[0]
        return lambda record: (getattr(record, name),)
    return attrgetter(*names)


def _eq(self, other):
    if other.__class__ is self.__class__:
        values = self._compared_values
        return values(self) == values(other)
    return NotImplemented


def _hash(self):
    return hash(self._hashed_values(self))


def _repr(self):
    shown = ", ".join(f"{name}={getattr(self, name)!r}" for name in self._shown_fields)
    return f"{self.__class__.__qualname__}({shown})"


def _first_init(self, *args, **kwargs):
    """The `__init__` of a record class before its first instance: it compiles the
    class's own `__init__`, puts it on the class and calls it."""
    cls = self.__class__
    while "_shown_fields" not in cls.__dict__:      # (a subclass that is no record)
        cls = cls.__base__
    cls.__init__ = _compiled_init(cls)
    cls.__init__(self, *args, **kwargs)


def _compiled_init(cls):
    """The `__init__` `dataclass` would write for `cls`, compiled."""
    namespace = {"_set": object.__setattr__, "_FACTORY": _FACTORY}
    positional, keyword, assignments = [], [], []
    for f in fields(cls):
        name = f.name
        if f.default is not MISSING:
            namespace[f"_default_{name}"] = f.default
            parameter, value = f"{name}=_default_{name}", name
        elif f.default_factory is not MISSING:
            namespace[f"_factory_{name}"] = f.default_factory
            parameter = f"{name}=_FACTORY"
            value = f"_factory_{name}() if {name} is _FACTORY else {name}"
        else:
            parameter, value = name, name
        (keyword if f.kw_only else positional).append(parameter)
        assignments.append(f"    _set(self, {name!r}, {value})")
    if hasattr(cls, "__post_init__"):
        assignments.append("    self.__post_init__()")
    parameters = ", ".join(["self", *positional, *(["*", *keyword] if keyword else [])])
    source = "\n".join([f"def __init__({parameters}):", *(assignments or ["    pass"])])
    exec(compile(source, f"<record {cls.__qualname__}>", "exec"), namespace)
    init = namespace["__init__"]
    init.__qualname__ = f"{cls.__qualname__}.__init__"
    return init
