"""Round-off in the reversible leapfrog of examples/leapfrog.rev (NiLang paper, appendix F).

For every N in a range this script runs the rev program through the Python API
(`rlang.load`), in both styles of the acceleration kick:

    ANCILLA (0)  the difference x[j] - x[i] lives in an ancilla (paper listing 25)
    INPUT   (1)  the difference is made in place on the input x[j] (listing 26)

and measures, for each style,

    roundtrip  the drift of N steps forward then N steps back: the phase-space
               distance sqrt(|x - x0|² + |v - v0|²) of the restored state from x0, v0;
    forward    the error of the forward state after N steps against the same
               leapfrog computed with 50-digit `decimal` arithmetic from the same
               binary starting values (so it is round-off only, no truncation
               error): the mean over the four bodies of |x_body - x_body,ref| in AU,
               the paper's "mean error in the final axes";

and the forward error of the ordinary, irreversible leapfrog ("regular", the
paper's baseline), written plainly in Python floats and vectorised with NumPy.
It checks on the way that the rev program gives, bit for bit, the numbers of
`mirror_leapfrog` (the same operations in the same order in Python floats), and
that the ANCILLA style's forward run is the plain regular leapfrog bit for bit
(the paper's overlapping "regular" and "reversible" lines).

It prints a table and writes the log-log figure docs/leapfrog_drift.svg (the data
is kept in the SVG's <metadata> as JSON); `--json FILE` also writes the data.

    python scripts/leapfrog_reference.py                  # N = 10 … 5000, ~4 minutes
    python scripts/leapfrog_reference.py --ns 10 30 100   # a quick look
    python scripts/leapfrog_reference.py --mirror         # the Python mirror instead of
                                                          # the interpreter (seconds)
    python scripts/leapfrog_reference.py --figure /tmp/f.svg   # leave docs/ alone

Only the standard library, NumPy and rlang are used; the SVG is written by hand.
"""
from __future__ import annotations

import argparse
import json
import math
import sys
import time
from decimal import Decimal, localcontext
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

EXAMPLE = REPO / "examples" / "leapfrog.rev"
FIGURE = REPO / "docs" / "leapfrog_drift.svg"
DEFAULT_NS = [10, 20, 50, 100, 200, 500, 1000, 2000, 5000]
DT = 0.01
ANCILLA, INPUT = 0, 1
STYLE_NAMES = {ANCILLA: "ancilla", INPUT: "input"}
GM = 4.0 * math.pi * math.pi           # the rev constant `4.0 * pi * pi`, same rounding


# ---------------------------------------------------------------------- the program

def load_program(invcheck: bool = False):
    """The rev program (checks off: they do not change the numbers, only the time)."""
    import rlang

    return rlang.load(str(EXAMPLE), invcheck=invcheck)


def initial_state(program=None):
    """(m, x, v) as the rev program's `initial_state!` writes them."""
    program = program or load_program()
    m, x, v = np.zeros(4), np.zeros((4, 3)), np.zeros((4, 3))
    program.initial_state_(m, x, v)
    return m, x, v


def rev_leapfrog(program, x, v, m, dt, n, style, inverse=False):
    """Run `leapfrog!` (or `~leapfrog!`) of the rev program on x, v in place."""
    function = program.leapfrog_
    (~function if inverse else function)(x, v, m, dt, n, style)
    return x, v


# ---------------------------------------------------- a mirror in Python floats

def _kick_pair(v, x, i, j, gmdt, style, sign):
    """One pair kick of the rev program, operation for operation (sign -1: inverse)."""
    d = 0.0
    for k in range(3):
        d += (x[j][k] - x[i][k]) * (x[j][k] - x[i][k])
    anc1 = math.sqrt(d)
    anc2 = math.pow(anc1, 3.0)
    anc3 = gmdt / anc2
    if style == ANCILLA:
        rc = [x[j][k] - x[i][k] for k in range(3)]
        for k in range(3):
            v[i][k] = v[i][k] + anc3 * rc[k] if sign > 0 else v[i][k] - anc3 * rc[k]
    else:
        for k in range(3):
            x[j][k] -= x[i][k]
        for k in range(3):
            v[i][k] = v[i][k] + anc3 * x[j][k] if sign > 0 else v[i][k] - anc3 * x[j][k]
        for k in range(3):
            x[j][k] += x[i][k]          # not exactly the x[j] we started with


def _kick(v, x, m, dt, style, sign):
    nb = len(m)
    pairs = [(i, j) for i in range(nb) for j in range(nb) if i != j]
    for i, j in (pairs if sign > 0 else reversed(pairs)):
        _kick_pair(v, x, i, j, GM * m[j] * dt, style, sign)


def _drift(x, v, dt, sign):
    for i in range(len(x)):
        for k in range(3):
            x[i][k] = x[i][k] + v[i][k] * dt if sign > 0 else x[i][k] - v[i][k] * dt


def mirror_leapfrog(x, v, m, dt, n, style, inverse=False):
    """`leapfrog!` (or its inverse) of examples/leapfrog.rev in Python floats: the same
    operations in the same order, so the results agree bit for bit.  x, v: NumPy
    arrays, updated in place and returned."""
    xs, vs, ms = x.tolist(), v.tolist(), list(map(float, m))
    if not inverse:
        _kick(vs, xs, ms, dt / 2.0, style, +1)
        for _ in range(1, n):
            _drift(xs, vs, dt, +1)
            _kick(vs, xs, ms, dt, style, +1)
        _drift(xs, vs, dt, +1)
        _kick(vs, xs, ms, dt / 2.0, style, +1)
    else:
        _kick(vs, xs, ms, dt / 2.0, style, -1)
        _drift(xs, vs, dt, -1)
        for _ in range(1, n):
            _kick(vs, xs, ms, dt, style, -1)
            _drift(xs, vs, dt, -1)
        _kick(vs, xs, ms, dt / 2.0, style, -1)
    x[...] = xs
    v[...] = vs
    return x, v


# ------------------------------------------------------------ reference solutions

def regular_leapfrog(x, v, m, dt, n):
    """The ordinary, irreversible kick-drift-kick leapfrog written plainly with Python
    floats (the paper's "regular" program): v_i += G m_j dt (x_j - x_i) / r³ pair by
    pair, then x += v dt.  Returns new arrays."""
    xs, vs, ms = np.array(x, dtype=float).tolist(), np.array(v, dtype=float).tolist(), \
        [float(mi) for mi in m]
    nb = len(ms)

    def kick(h):
        for i in range(nb):
            for j in range(nb):
                if i != j:
                    diff = [xs[j][k] - xs[i][k] for k in range(3)]
                    r = math.sqrt(diff[0] * diff[0] + diff[1] * diff[1] + diff[2] * diff[2])
                    f = GM * ms[j] * h / r ** 3
                    for k in range(3):
                        vs[i][k] += f * diff[k]

    kick(dt / 2)
    for step in range(n):
        for i in range(nb):
            for k in range(3):
                xs[i][k] += vs[i][k] * dt
        kick(dt if step < n - 1 else dt / 2)
    return np.array(xs), np.array(vs)


def numpy_accelerations(x, m):
    """a_i = Σ_j G m_j (x_j - x_i) / |x_j - x_i|³, vectorised."""
    diff = x[None, :, :] - x[:, None, :]                 # diff[i, j] = x_j - x_i
    dist2 = np.einsum("ijk,ijk->ij", diff, diff)
    np.fill_diagonal(dist2, 1.0)
    weight = GM * m[None, :] / dist2 ** 1.5
    np.fill_diagonal(weight, 0.0)
    return np.einsum("ij,ijk->ik", weight, diff)


def numpy_leapfrog(x, v, m, dt, n):
    """The same irreversible leapfrog vectorised with NumPy (the accelerations summed
    first, then v += a dt: other roundings than `regular_leapfrog`); returns new
    arrays."""
    x, v = np.array(x, dtype=float), np.array(v, dtype=float)
    v = v + numpy_accelerations(x, m) * (dt / 2)
    for step in range(n):
        x = x + v * dt
        v = v + numpy_accelerations(x, m) * (dt if step < n - 1 else dt / 2)
    return x, v


def decimal_trajectory(x, v, m, dt, ns, digits=50):
    """The leapfrog in `digits`-digit decimal arithmetic from the exact binary values
    of x, v, m, dt and GM; returns {n: (x_n, v_n)} as float arrays for n in ns."""
    with localcontext() as context:
        context.prec = digits
        return _decimal_trajectory(x, v, m, dt, ns)


def _decimal_trajectory(x, v, m, dt, ns):
    D = Decimal
    gm = D(GM)
    dt_, half = D(dt), D(dt) / 2
    ms = [D(float(mi)) for mi in m]
    xs = [[D(float(c)) for c in row] for row in x]
    vs = [[D(float(c)) for c in row] for row in v]
    nb = len(ms)

    def acc():
        a = [[D(0)] * 3 for _ in range(nb)]
        for i in range(nb):
            for j in range(nb):
                if i != j:
                    diff = [xs[j][k] - xs[i][k] for k in range(3)]
                    d2 = sum(c * c for c in diff)
                    w = gm * ms[j] / (d2 * d2.sqrt())
                    for k in range(3):
                        a[i][k] += w * diff[k]
        return a

    wanted, out = set(ns), {}
    a = acc()
    for step in range(1, max(ns) + 1):
        for i in range(nb):                       # kick dt/2, drift dt, kick dt/2
            for k in range(3):
                vs[i][k] += a[i][k] * half
                xs[i][k] += vs[i][k] * dt_
        a = acc()
        for i in range(nb):
            for k in range(3):
                vs[i][k] += a[i][k] * half
        if step in wanted:
            out[step] = (np.array([[float(c) for c in r] for r in xs]),
                         np.array([[float(c) for c in r] for r in vs]))
    return out


def phase_distance(xa, va, xb, vb) -> float:
    """sqrt(|xa - xb|² + |va - vb|²), as main's `distance!` computes it."""
    return math.sqrt(float(np.sum((xa - xb) ** 2) + np.sum((va - vb) ** 2)))


def axis_error(x, x_ref) -> float:
    """The mean over the bodies of the position error |x_b - x_b,ref| (AU)."""
    return float(np.mean(np.linalg.norm(x - x_ref, axis=1)))


# ------------------------------------------------------------------ measurement

def measure(ns, use_mirror=False, dt=DT, log=print):
    """One row per N: forward errors (regular, ancilla, input) against the decimal
    reference and the round-trip drift of each style."""
    program = load_program()
    m, x0, v0 = initial_state(program)
    reference = decimal_trajectory(x0, v0, m, dt, ns)
    rows = []
    for n in ns:
        row = {"n": n}
        x_reg, v_reg = regular_leapfrog(x0, v0, m, dt, n)
        x_ref, v_ref = reference[n]
        row["forward_regular"] = axis_error(x_reg, x_ref)
        row["forward_numpy"] = axis_error(numpy_leapfrog(x0, v0, m, dt, n)[0], x_ref)
        started = time.perf_counter()
        for style, name in STYLE_NAMES.items():
            x, v = x0.copy(), v0.copy()
            xm, vm = mirror_leapfrog(x0.copy(), v0.copy(), m, dt, n, style)
            if use_mirror:
                x[...], v[...] = xm, vm
            else:
                rev_leapfrog(program, x, v, m, dt, n, style)
                assert np.array_equal(x, xm) and np.array_equal(v, vm), \
                    f"rev and mirror differ ({name}, N = {n})"
            row[f"forward_{name}"] = axis_error(x, x_ref)
            if style == ANCILLA:
                assert np.array_equal(x, x_reg) and np.array_equal(v, v_reg), \
                    f"the ancilla style is not the regular leapfrog (N = {n})"
            row[f"forward_{name}_vs_regular"] = float(np.max(np.abs(x - x_reg)))
            if use_mirror:
                mirror_leapfrog(x, v, m, dt, n, style, inverse=True)
            else:
                rev_leapfrog(program, x, v, m, dt, n, style, inverse=True)
                xb, vb = mirror_leapfrog(xm, vm, m, dt, n, style, inverse=True)
                assert np.array_equal(x, xb) and np.array_equal(v, vb), \
                    f"~rev and ~mirror differ ({name}, N = {n})"
            row[f"roundtrip_{name}"] = phase_distance(x, v, x0, v0)
        row["seconds"] = round(time.perf_counter() - started, 2)
        rows.append(row)
        log(format_row(row))
    return rows


COLUMNS = [("n", "N"), ("forward_regular", "fwd regular"), ("forward_numpy", "fwd numpy"),
           ("forward_ancilla", "fwd ancilla"), ("forward_input", "fwd input"),
           ("roundtrip_ancilla", "trip ancilla"), ("roundtrip_input", "trip input"),
           ("seconds", "s")]


def format_header() -> str:
    return " | ".join(f"{title:>12}" for _, title in COLUMNS)


def format_row(row) -> str:
    cells = []
    for key, _ in COLUMNS:
        value = row[key]
        cells.append(f"{value:>12}" if isinstance(value, int) or key == "seconds"
                     else f"{value:>12.3e}")
    return " | ".join(cells)


# ------------------------------------------------------------------- the figure

SERIES = [  # (key, label, colour, dashed?)
    ("forward_regular", "forward, regular (irreversible)", "#555555", False),
    ("forward_numpy", "forward, regular NumPy (vectorised)", "#aaaaaa", False),
    ("forward_ancilla", "forward, ancilla style (listing 25)", "#1f77b4", True),
    ("forward_input", "forward, input style (listing 26)", "#d62728", False),
    ("roundtrip_ancilla", "N forward + N back, ancilla style", "#2ca02c", False),
    ("roundtrip_input", "N forward + N back, input style", "#ff7f0e", False),
]


def svg_loglog(rows, series, title, xlabel, ylabel, width=800, height=480) -> str:
    """A log-log line chart as SVG text (zeros are left out: they have no logarithm)."""
    left, right, top, bottom = 80, 270, 40, 60
    pw, ph = width - left - right, height - top - bottom
    xs = [r["n"] for r in rows]
    ys = [r[key] for r in rows for key, *_ in series if r[key] > 0]
    x_lo, x_hi = math.floor(math.log10(min(xs))), math.ceil(math.log10(max(xs)))
    y_lo, y_hi = math.floor(math.log10(min(ys))), math.ceil(math.log10(max(ys)))
    if x_hi == x_lo:
        x_hi += 1
    if y_hi == y_lo:
        y_hi += 1

    def px(n):
        return left + (math.log10(n) - x_lo) / (x_hi - x_lo) * pw

    def py(y):
        return top + (y_hi - math.log10(y)) / (y_hi - y_lo) * ph

    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
           f'viewBox="0 0 {width} {height}" font-family="sans-serif" font-size="12">',
           f'<rect width="{width}" height="{height}" fill="white"/>',
           f'<text x="{left + pw / 2}" y="22" text-anchor="middle" font-size="14">'
           f'{title}</text>']
    for e in range(x_lo, x_hi + 1):                         # grid and ticks
        x = px(10 ** e)
        out.append(f'<line x1="{x:.1f}" y1="{top}" x2="{x:.1f}" y2="{top + ph}" '
                   'stroke="#dddddd"/>')
        out.append(f'<text x="{x:.1f}" y="{top + ph + 18}" text-anchor="middle">'
                   f'10<tspan dy="-6" font-size="9">{e}</tspan></text>')
    for e in range(y_lo, y_hi + 1):
        y = py(10 ** e)
        out.append(f'<line x1="{left}" y1="{y:.1f}" x2="{left + pw}" y2="{y:.1f}" '
                   'stroke="#dddddd"/>')
        out.append(f'<text x="{left - 8}" y="{y + 4:.1f}" text-anchor="end">'
                   f'10<tspan dy="-6" font-size="9">{e}</tspan></text>')
    out.append(f'<rect x="{left}" y="{top}" width="{pw}" height="{ph}" fill="none" '
               'stroke="black"/>')
    out.append(f'<text x="{left + pw / 2}" y="{height - 15}" text-anchor="middle">'
               f'{xlabel}</text>')
    out.append(f'<text transform="translate(20 {top + ph / 2}) rotate(-90)" '
               f'text-anchor="middle">{ylabel}</text>')
    for index, (key, label, colour, dashed) in enumerate(series):
        points = [(px(r["n"]), py(r[key])) for r in rows if r[key] > 0]
        dash = ' stroke-dasharray="6 4"' if dashed else ""
        path = " ".join(f"{x:.1f},{y:.1f}" for x, y in points)
        out.append(f'<polyline points="{path}" fill="none" stroke="{colour}" '
                   f'stroke-width="2"{dash}/>')
        for x, y in points:
            shape = (f'<circle cx="{x:.1f}" cy="{y:.1f}" r="3" fill="{colour}"/>'
                     if key.startswith("forward") else
                     f'<rect x="{x - 3:.1f}" y="{y - 3:.1f}" width="6" height="6" '
                     f'fill="{colour}"/>')
            out.append(shape)
        ly = top + 10 + 22 * index                           # legend, markers: ● forward,
        #                                                      ■ round trip
        lx = left + pw + 15
        out.append(f'<line x1="{lx}" y1="{ly}" x2="{lx + 25}" y2="{ly}" stroke="{colour}" '
                   f'stroke-width="2"{dash}/>')
        out.append(f'<text x="{lx + 32}" y="{ly + 4}" font-size="11">{label}</text>')
    out.append("</svg>")
    return "\n".join(out) + "\n"


def write_figure(rows, path=FIGURE, note="") -> None:
    svg = svg_loglog(
        rows, SERIES,
        title="Round-off in the reversible leapfrog (Sun, Earth, Jupiter, Saturn; dt = 0.01 yr)",
        xlabel="N (leapfrog steps)",
        ylabel="error: forward (AU, vs 50 digits) / round trip (phase space)")
    metadata = json.dumps({"note": note, "rows": rows}, indent=1)
    svg = svg.replace("</svg>", f"<metadata>{metadata}</metadata>\n</svg>")
    Path(path).write_text(svg, encoding="utf-8")


# ------------------------------------------------------------------------- main

def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ns", type=int, nargs="+", default=DEFAULT_NS,
                        help="numbers of steps (default: %(default)s)")
    parser.add_argument("--mirror", action="store_true",
                        help="run the Python mirror instead of the rev interpreter")
    parser.add_argument("--figure", default=str(FIGURE), help="SVG to write")
    parser.add_argument("--json", help="also write the data to this JSON file")
    args = parser.parse_args(argv)
    ns = sorted(set(args.ns))
    print(format_header())
    started = time.perf_counter()
    rows = measure(ns, use_mirror=args.mirror)
    source = "python mirror" if args.mirror else "rev interpreter"
    print(f"total {time.perf_counter() - started:.1f} s ({source})")
    note = (f"examples/leapfrog.rev run by the {source}; dt = {DT} yr; forward errors: "
            "mean |x_body - x_body,ref| (AU) against a 50-digit decimal leapfrog; "
            "round trip: phase-space distance to the initial state")
    write_figure(rows, args.figure, note)
    print(f"wrote {args.figure}")
    if args.json:
        Path(args.json).write_text(json.dumps({"note": note, "rows": rows}, indent=1) + "\n",
                                   encoding="utf-8")
        print(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
