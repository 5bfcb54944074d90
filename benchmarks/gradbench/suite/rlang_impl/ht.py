"""ht: the objective is rev's `ht_triangles!` (complicated) or `ht_vertices!`
(simple) over the whole model; the Jacobian is rlang's gradients of the same
function, one point at a time, batched over the points, or its forward-mode
columns where those are cheaper (Note [Rows or columns]).

Note [The hand Jacobian point by point]
~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
Point i's three errors depend on theta (26), on its own us (2, complicated) and
on the model, and of the model only on its own vertices (its triangle's three,
or one).  Called with those vertices alone (and correspondence 0, triangle
(0, 1, 2)), the eval's own function computes exactly point i's errors.  So the
Jacobian is three batched gradients (`rlang.vmap` of `rlang.grad`, one per
coordinate j of the error), each one native forward pass and one native
gradient pass over all N points: row 3i + j is [∂e_ij/∂us_i, ∂e_ij/∂theta].
Each item recomputes the bone transforms (22 small matrix products), which
costs more arithmetic than sharing them but no Python per point; the skinning
of the model's other vertices, which point i does not depend on, is not
differentiated.  (`rlang.vmap` gives every item its own gradient of the shared
bone arrays too, 2 × 22 × 16 floats per point: about 280 MB for GradBench's
largest input, 51,200 points.)

Note [Rows or columns]
~~~~~~~~~~~~~~~~~~~~~~
By points the Jacobian costs in proportion to N (each point poses the bones
again); by columns it costs 26 (+ 2) forward-mode runs (`rlang.jvp`) of the
whole objective, in proportion to the model's vertices and independent of N.
A column of theta is the tangent of the errors along theta's k-th unit vector;
the two us columns each take one run, with tangent 1 on us[i, c] for every i
at once (point i's errors depend on us_i alone, so the tangent of e_i is
∂e_i/∂us_ic).  `prepare` times both on the first 64 points (the same model) and
keeps the one that predicts less time for all N: by points for GradBench's
small inputs (100-400 points with the big model), by columns for the large
ones.  Both are rlang's derivatives of the same rev function; they agree to
rounding.
"""

from __future__ import annotations

import time

import numpy as np
import rlang

from . import warm_up
from ..common import Prepared, UnknownFunction
from ..inputs.ht import Hand, jacobian_output, objective_output
from ._load import program


def arguments(hand: Hand) -> tuple[str, tuple]:
    """(the rev function of `hand`'s variant, its arguments after the errors)."""
    model = (hand.parents, hand.base_rel, hand.inv_abs, hand.mirrored)
    if hand.complicated:
        return "ht_triangles!", (hand.theta, hand.us, hand.points, hand.corr,
                                 hand.triangles, hand.base, hand.weights) + model
    return "ht_vertices!", (hand.theta, hand.points, hand.corr, hand.base,
                            hand.weights) + model


def point_arguments(hand: Hand) -> tuple[tuple, tuple]:
    """(the per-point arguments after the errors, their `in_axes`): each point's
    us, point and vertices batched; theta, correspondence 0, the triangle
    (0, 1, 2) and the bones shared."""
    model = (hand.parents, hand.base_rel, hand.inv_abs, hand.mirrored)
    points = hand.points[:, None, :]
    own = (hand.point_base, hand.point_weights)
    if hand.complicated:
        args = (hand.theta, hand.us[:, None, :], points, np.zeros(1, dtype=np.int64),
                np.array([[0, 1, 2]], dtype=np.int64)) + own + model
        axes = (None, 0, 0, None, None, 0, 0) + (None,) * 4
    else:
        args = (hand.theta, points, np.zeros(1, dtype=np.int64)) + own + model
        axes = (None, 0, None, 0, 0) + (None,) * 4
    return args, (0,) + axes


def _point_rows(m, name: str, hand: Hand):
    """The Jacobian by points (Note [The hand Jacobian point by point]): a function
    of no arguments returning it (3N × ncols)."""
    per_point, axes = point_arguments(hand)
    wrt = (1, 2) if hand.complicated else (1,)
    rows = [rlang.vmap(rlang.grad(m[name], ("e!", (0, j)), argnums=wrt), in_axes=axes)
            for j in range(3)]
    n, ncols = hand.n, 26 + 2 * hand.complicated

    def jacobian():
        jac = np.empty((n, 3, ncols))
        for j, row in enumerate(rows):
            grads = row(np.zeros((n, 1, 3)), *per_point)
            if hand.complicated:
                jac[:, j, :2] = grads[1][:, 0, :]
            jac[:, j, ncols - 26:] = grads[0]
        return jac.reshape(3 * n, ncols)
    return jacobian


def _columns(m, name: str, hand: Hand):
    """The Jacobian by columns (Note [Rows or columns]): a function of no
    arguments returning it (3N × ncols)."""
    _, args = arguments(hand)
    f, n = m[name], hand.n
    directions = []
    if hand.complicated:            # us[:, c] all at once: e_i depends on us_i alone
        for c in range(2):
            along = np.zeros((n, 2))
            along[:, c] = 1.0
            directions.append([None, None, along])
    for k in range(26):
        along = np.zeros(26)
        along[k] = 1.0
        directions.append([None, along])
    tangents = [d + [None] * (len(args) + 1 - len(d)) for d in directions]

    def jacobian():
        jac = np.empty((3 * n, len(tangents)))
        for c, tangent in enumerate(tangents):
            jac[:, c] = np.ravel(rlang.jvp(f, (np.zeros((n, 3)),) + args, tangent)[1][0])
        return jac
    return jacobian


def _seconds(run) -> float:
    start = time.perf_counter()
    run()
    return time.perf_counter() - start


def _faster(m, name: str, hand: Hand):
    """Note [Rows or columns]: the Jacobian function expected to be faster for
    `hand`, from timed runs of both on its first 64 points (or fewer)."""
    sample = min(hand.n, 64)
    few = Hand.subset(hand, sample)
    by_points, by_columns = _point_rows(m, name, few), _columns(m, name, few)
    by_points(), by_columns()       # compile
    points = min(_seconds(by_points) for _ in range(2)) * hand.n / sample
    columns = min(_seconds(by_columns) for _ in range(2))   # the model's cost, not N's
    if points <= columns:
        return _point_rows(m, name, hand)
    return _columns(m, name, hand)


def checked(hand: Hand) -> Hand:
    """`hand`, after checking what evals/ht.rev's `@inbounds` code takes for granted
    (ValueError where it does not hold): theta's 26 parameters, the bones that
    pose_angles! indexes, parents before their children, vertices with 4
    coordinates and one weight per bone, and correspondences and triangles that
    name vertices of the model."""
    nv, nb = len(hand.base), len(hand.base_rel)
    problems = [
        (hand.theta.size < 26, f"theta has {hand.theta.size} parameters, not 26"),
        (nb < 19 or hand.base_rel.shape[1:] != (4, 4) or hand.inv_abs.shape != (nb, 4, 4),
         "the model needs at least 19 bones, each with 4 x 4 transforms"),
        (len(hand.parents) != nb or np.any(hand.parents >= np.arange(nb)) or
         np.any(hand.parents < -1), "each bone's parent must come before it"),
        (hand.base.shape[1:] != (4,) or hand.weights.shape != (nv, nb),
         "each vertex needs 4 coordinates and one weight per bone"),
        (np.any(hand.triangles < 0) or np.any(hand.triangles >= nv),
         "a triangle names a vertex the model does not have"),
        (np.any(hand.corr < 0) or np.any(hand.corr >= (len(hand.triangles)
                                                       if hand.complicated else nv)),
         "a correspondence names a vertex or triangle the model does not have"),
    ]
    for failed, message in problems:
        if failed:
            raise ValueError(f"ht input: {message}")
    return hand


def prepare(function: str, input) -> Prepared:
    m = program("ht")
    hand = checked(Hand(input))
    name, args = arguments(hand)
    n = hand.n
    if function == "objective":
        f = m[name]

        def run():
            return f(np.zeros((n, 3)), *args)[0]
        output = objective_output
    elif function == "jacobian":
        run, output = _faster(m, name, hand), jacobian_output
    else:
        raise UnknownFunction("ht", function)
    warm_up(run)
    return Prepared(run, output)
