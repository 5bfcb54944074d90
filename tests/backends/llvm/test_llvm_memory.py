"""Where compiled code keeps array ancillas, and how arguments reach it (issue #5).

Small array ancillas live on the stack, given back at the end of each loop pass
(Note [Small array ancillas] in rlang/backends/llvm/ancillas.py); larger ones and those
of recursive functions come from the heap.  Each case is compared with the
interpreter: forward, inverse, the deallocation check, gradients.  Arguments are
packed into one buffer per call (rlang/backends/llvm/marshal.py): views, strides,
offsets and every scalar type must arrive as they are.
"""
from __future__ import annotations

import numpy as np
import pytest

import rlang
from rlang.errors import RlangError

from gradient_agreement import assert_same_gradients

ANCILLAS = """
# s! += sum over passes of the squares of a scratch array of n elements
function scratch!(s!: f64, x: f64[:], n: i64, passes: i64)
    for p = 1:passes
        @routine begin
            t ← zeros(f64, n)
            for k = 0:n - 1
                t[k] += x[k % length(x)] * f64(p)
            end
        end
        for k = 0:n - 1
            s! += t[k] * t[k]
        end
        ~@routine
    end
end

# two ancillas freed in the order they were allocated (not last in, first out)
function crossed!(s!: f64, x: f64[:], n: i64)
    a ← zeros(f64, n)
    b ← zeros(f64, n, 2)
    for k = 0:n - 1
        a[k] += x[k % length(x)]
        b[k, 1] += a[k] * 2.0
    end
    for k = 0:n - 1
        s! += a[k] * b[k, 1]
    end
    for k = 0:n - 1
        b[k, 1] -= a[k] * 2.0
        a[k] -= x[k % length(x)]
    end
    a → zeros(f64, n)
    b → zeros(f64, n, 2)
end

# an ancilla that must be zero again when it is freed
function leaky!(s!: f64, x: f64[:])
    t ← zeros(f64, length(x))
    t[0] += x[0]
    s! += t[0]
    t → zeros(f64, length(x))
end

# a recursive function with an array ancilla in every frame
function depth!(s!: f64, x: f64[:], k: i64)
    if (k > 0, ~)
        t ← zeros(f64, 3)
        t[1] += x[0] * f64(k)
        s! += t[1]
        depth!(s!, x, k - 1)
        t[1] -= x[0] * f64(k)
        t → zeros(f64, 3)
    end
end
"""


def both(source: str = ANCILLAS):
    return rlang.loads(source), rlang.loads(source, backend="llvm")


@pytest.mark.parametrize("n", [1, 7, 512, 513, 5000])
def test_scratch_arrays_on_the_stack_and_the_heap_agree(n):
    """512 doubles (4096 bytes) is the largest on the stack; 513 goes to the heap."""
    interp, llvm = both()
    x = np.linspace(-1.0, 2.0, 5)
    want = getattr(interp, "scratch!")(0.0, x, n, 3)
    got = getattr(llvm, "scratch!")(0.0, x, n, 3)
    assert got[0] == pytest.approx(want[0], rel=1e-12)
    back = (~getattr(llvm, "scratch!"))(got[0], x, n, 3)
    assert back[0] == pytest.approx(0.0, abs=1e-9 * abs(got[0]))
    g_llvm = rlang.gradient(getattr(llvm, "scratch!"), [0.0, x, n, 3], loss="s!")
    g_interp = rlang.gradient(getattr(interp, "scratch!"), [0.0, x, n, 3], loss="s!")
    assert_same_gradients(g_llvm, g_interp, f"n = {n}")


def test_many_passes_do_not_grow_the_stack():
    """10^5 passes of a 4 KB ancilla: 400 MB if each pass kept its stack memory."""
    llvm = rlang.loads(ANCILLAS, backend="llvm", invcheck=False)
    s, *_ = getattr(llvm, "scratch!")(0.0, np.ones(1), 512, 100_000)
    assert s == pytest.approx(512 * sum(p * p for p in range(1, 100_001)), rel=1e-9)


@pytest.mark.parametrize("n", [3, 300, 3000])
def test_ancillas_freed_in_allocation_order(n):
    interp, llvm = both()
    x = np.array([0.5, -1.5, 2.0])
    assert getattr(llvm, "crossed!")(0.0, x, n)[0] == \
        pytest.approx(getattr(interp, "crossed!")(0.0, x, n)[0], rel=1e-12)
    assert_same_gradients(rlang.gradient(getattr(llvm, "crossed!"), [0.0, x, n], loss="s!"),
                          rlang.gradient(getattr(interp, "crossed!"), [0.0, x, n], loss="s!"))


@pytest.mark.parametrize("size", [4, 4000])
def test_deallocation_check_on_stack_and_heap_ancillas(size):
    interp, llvm = both()
    x = np.full(size, 1.5)
    with pytest.raises(RlangError) as expected:
        getattr(interp, "leaky!")(0.0, x)
    with pytest.raises(RlangError) as got:
        getattr(llvm, "leaky!")(0.0, x)
    # the array as the interpreter quotes it (summarized when long)
    assert type(got.value) is type(expected.value)
    assert str(got.value) == str(expected.value)


def test_recursive_ancillas_come_from_the_heap():
    interp, llvm = both()
    x = np.array([0.25])
    assert getattr(llvm, "depth!")(0.0, x, 2000)[0] == \
        pytest.approx(getattr(interp, "depth!")(0.0, x, 2000)[0], rel=1e-12)


ARGUMENTS = """
function take!(y!: f64[:], m!: f64[:,:], k!: i64[:], i!: i32, f!: f32, b: bool,
               q!: fixed, l!: ulog, z!: complex, a: f64)
    for j = 0:length(y!) - 1
        y![j] += a * f64(j)
    end
    for r = 0:size(m!, 0) - 1
        for c = 0:size(m!, 1) - 1
            m![r, c] += f64(10 * r + c)
        end
    end
    k![length(k!) - 1] += 7
    i! += 2
    f! += 0.5
    if (b, ~)
        q! += 1.25
    end
    l! *= 3.0
    z! += complex(1.0, -2.0)
end
"""


def _arguments(y, m, k):
    from rlang.numbers import F32, I32, Fixed, ULog

    return [y, m, k, I32(3), F32(1.5), True, Fixed.from_value(2.0), ULog.from_value(2.0),
            complex(0.5, 0.25), 1.5]


def _views():
    """Zeroed arguments: contiguous; strided views of a larger array; offset views
    and a transpose."""
    base = np.zeros((5, 8))
    return [
        (np.zeros(4), np.zeros((2, 3)), np.zeros(3, dtype=np.int64)),
        (base[1, 1::2], base[::2, 1::3], np.zeros(6, dtype=np.int64)[::2]),
        (np.zeros(9)[3:], np.zeros((3, 4)).T, np.zeros(5, dtype=np.int64)[1:4]),
    ]


@pytest.fixture(params=["objects", "descriptors"])
def array_passing(request, monkeypatch):
    """Both ways arrays reach compiled code (Note [Arrays read by the entry point]):
    as NumPy objects the entry point reads, and as descriptors packed in Python
    (where NumPy's object layout is not the one probed)."""
    from rlang.backends.llvm import marshal as llvm_marshal

    if request.param == "descriptors":
        monkeypatch.setattr(llvm_marshal, "_HEADER_LAYOUT", [None])
    elif llvm_marshal.array_header() is None:
        pytest.skip("NumPy's array objects do not have the probed layout here")
    return request.param


@pytest.mark.parametrize("views", range(3))
def test_arguments_arrive_as_they_are(views, array_passing):
    """Offsets, strides, transposes and every scalar type, against the interpreter."""
    interp, llvm = both(ARGUMENTS)
    y, m, k = _views()[views]
    y2, m2, k2 = _views()[views]
    want = getattr(interp, "take!")(*_arguments(y, m, k))
    for _ in range(2):          # the second call takes the fast path
        y2[...], m2[...], k2[...] = 0, 0, 0
        got = getattr(llvm, "take!")(*_arguments(y2, m2, k2))
    for w, g in zip(want, got):
        if isinstance(w, np.ndarray):
            assert np.array_equal(np.asarray(g), np.asarray(w))
        else:
            assert repr(g) == repr(w)
    assert np.array_equal(y2, y) and np.array_equal(m2, m) and np.array_equal(k2, k)


def test_misaligned_arrays_are_refused(array_passing):
    """(Arrays in the other byte order are refused by the binding rules already.)"""
    llvm = rlang.loads(ARGUMENTS, backend="llvm")
    misaligned = np.zeros(8 * 5 + 1, dtype=np.uint8)[1:].view(np.float64)
    for _ in range(2):
        with pytest.raises(RlangError, match="aligned arrays in native byte order"):
            getattr(llvm, "take!")(*_arguments(misaligned, np.zeros((2, 2)),
                                               np.zeros(1, dtype=np.int64)))


ONE_WORD = """
function scalars!(y!: f64[:], m: i64[:,:], i!: i32, f!: f32, b: bool, n!: i64, x!: f64)
    for j = 0:length(y!) - 1
        y![j] += x! * f64(m[j % size(m, 0), 1])
    end
    i! += 2
    f! += 0.5
    if (b, ~)
        n! += size(m, 1)
    end
    x! += f64(n!)
end
"""


def _one_word_arguments(y, m):
    from rlang.numbers import F32, I32

    return [y, m, I32(3), F32(1.5), True, 4, 0.25]


def test_arrays_and_one_word_scalars(array_passing):
    """A call of arrays and scalars held in one word each (Note [Calls of one-word
    arguments]): values and their types as the interpreter's, on the first call and
    the calls that reuse its buffer, with views of other strides in between."""
    interp = rlang.loads(ONE_WORD, backend="interp")
    llvm = rlang.loads(ONE_WORD, backend="llvm")
    arrays = [(np.zeros(4), np.arange(6).reshape(3, 2)),
              (np.zeros(9)[1::2], np.arange(12).reshape(3, 4)[:, ::2]),
              (np.zeros(4), np.arange(6).reshape(2, 3).T)]
    for y, m in arrays * 2:
        y_want = y.copy()
        want = getattr(interp, "scalars!")(*_one_word_arguments(y_want, m))
        got = getattr(llvm, "scalars!")(*_one_word_arguments(y, m))
        assert [repr(v) for v in got[2:]] == [repr(v) for v in want[2:]]
        assert np.array_equal(y, y_want) and got[0] is y and got[1] is m


def test_arrays_with_strides_in_part_elements_are_refused(array_passing):
    llvm = rlang.loads(ONE_WORD, backend="llvm")
    auto = rlang.loads(ONE_WORD)
    base = np.zeros(40)
    y = np.lib.stride_tricks.as_strided(base, shape=(4,), strides=(12,))
    with pytest.raises(RlangError, match="whole-element strides"):
        getattr(llvm, "scalars!")(*_one_word_arguments(y, np.ones((2, 2), dtype=np.int64)))
    # the default backend runs such a call on the interpreter
    got = getattr(auto, "scalars!")(*_one_word_arguments(y, np.ones((2, 2), dtype=np.int64)))
    assert got[6] == 6.25 and np.allclose(y, 0.25)


FAILING = """
function pick!(s!: f64, x: f64[:], k: i64)
    s! += x[k]
end
"""


def test_calls_after_a_failed_call(array_passing):
    """A failed call leaves nothing behind for the next: its error as the
    interpreter's each time, and the calls between it right."""
    interp = rlang.loads(FAILING, backend="interp")
    llvm = rlang.loads(FAILING, backend="llvm")
    x = np.array([1.0, 2.0, 3.0])
    for k in (1, 5, 2, -1, 0, 3):
        try:
            want = interp["pick!"](0.0, x, k)
        except RlangError as error:
            with pytest.raises(type(error)) as got:
                llvm["pick!"](0.0, x, k)
            assert got.value.render() == error.render()
        else:
            assert llvm["pick!"](0.0, x, k) == want


def test_only_numpy_arrays_are_read_as_array_objects():
    """The entry point reads an array argument's NumPy object: anything else in its
    place is refused before the call (it would be read as one)."""
    from rlang.ir import nodes as ir
    from rlang.backends.llvm.marshal import EntryLayout
    from rlang.types_rules import BackendUnsupported

    layout = EntryLayout(("f64", ir.ArrayType("f64", 1, True)), objects=True)
    layout.pack([0.0, np.zeros(3)], 100)
    for bad in ([1.0, 2.0], memoryview(b"12345678"), 3.0):
        with pytest.raises(BackendUnsupported, match="takes NumPy arrays"):
            layout.pack([0.0, bad], 100)


UPDATES = """
function add!(y!: f64[:], x: f64[:])
    for i = 0:length(x) - 1
        y![i] += x[i]
    end
end

function addf!(y!, x)
    for i = 0:length(x) - 1
        y![i] += x[i]
    end
end

function mulf!(y!, x)
    for i = 0:length(x) - 1
        y![i] *= x[i]
    end
end
"""


def _read_only(array):
    array.flags.writeable = False
    return array


def test_read_only_arrays_are_refused_where_they_are_updated(array_passing, tmp_path):
    """An array the function updates in place must be writable: the interpreter's
    error on every backend, on the first call and on calls that take the fast path
    (a read-only memory map written by compiled code would crash the process);
    read-only arrays that are only read are fine."""
    import mmap

    path = tmp_path / "zeros.bin"
    path.write_bytes(bytes(24))
    with open(path, "rb") as f:
        mapped = np.frombuffer(mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ), np.float64)
        interp = rlang.loads(UPDATES, backend="interp")
        with pytest.raises(RlangError) as expected:
            interp["add!"](_read_only(np.zeros(3)), np.ones(3))
        assert "read-only array" in expected.value.render()
        for backend in ("llvm", "auto"):
            m = rlang.loads(UPDATES, backend=backend)
            for y in (_read_only(np.zeros(3)), mapped, np.zeros(3), mapped):
                if y.flags.writeable:
                    assert np.array_equal(m["add!"](y, np.ones(3))[0], np.ones(3))
                    continue
                with pytest.raises(RlangError) as got:
                    m["add!"](y, np.ones(3))
                assert got.value.render() == expected.value.render()
            with pytest.raises(RlangError, match="read-only array"):
                rlang.gradient(m["add!"], [mapped, np.ones(3)], ("y!", 0))
            got = m["add!"](np.zeros(3), _read_only(np.ones(3)))
            assert np.array_equal(got[0], np.ones(3))


def test_byte_swapped_fixed_and_ulog_arrays_are_not_read_in_place(array_passing):
    """NumPy subclasses (fixed, ulog) in the other byte order are refused by the llvm
    backend; the default backend runs them on the interpreter."""
    from rlang.numbers import FixedArray, ULogArray, fixed_array, ulog_array

    llvm = rlang.loads(UPDATES, backend="llvm")
    auto = rlang.loads(UPDATES)
    interp = rlang.loads(UPDATES, backend="interp")
    swapped = fixed_array([1.0, 2.0]).astype(">i8").view(FixedArray)
    logs = ulog_array([2.0, 4.0]).astype(">f8").view(ULogArray)
    for fn, y, x in (("addf!", fixed_array([0.0, 0.0]), swapped),
                     ("mulf!", ulog_array([1.0, 1.0]), logs)):
        with pytest.raises(RlangError, match="native byte order"):
            llvm[fn](y.copy(), x)
        want = interp[fn](y.copy(), x)[0]
        assert repr(auto[fn](y.copy(), x)[0]) == repr(want)
