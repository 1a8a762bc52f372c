"""Lab 04-04 tests: the summary (m, denom, acc), its merge, and split-KV attention.

Run against your work with ``labs check 04-04 --impl starter`` or
``LAB_IMPL=starter pytest <this folder>``.

The truth is computed here, independently of the code under test, and **before** the call under
test: ``summary_f64`` builds the triple from its definition one key at a time (``math.exp``,
``math.fsum``), and ``labkit.attention_f64`` is dense softmax attention. The merge tests feed the
merge summaries built by ``summary_f64``, so a merge bug and an ``attend_partial`` bug fail
different tests. The algebraic laws (identity, commutativity, associativity) are checked against
the summary of the union of the key sets, never only against the implementation's own other
answers: a merge that is wrong but lawful (one that keeps the side with the larger max, say) must
fail them. Inputs a function must only read are handed over read-only
(``labkit.cases.read_only``), so a function that writes into them fails at once instead of
quietly changing the data an expectation is computed from.

Tolerance: everything is float64; only the order of the sums differs from the brute force. The
outputs are convex combinations of O(1) values, so reordering a sum of n <= 257 terms moves a
result by at most about n * 1.1e-16 * max|v| ~ 1e-13 (in practice ~1e-15). ``atol = rtol =
1e-12`` leaves a tenfold margin and is still ten orders of magnitude below what any of the
classic bugs changes (>= 1e-3). The overflow test builds its scores so that they are exact
(q = sqrt(d) * e_0 with d = 16, so q . k / sqrt(d) = k[0] with no rounding): logits of ~1000
do not cost accuracy there.
Keys far below the top score are the exception: dropping them moves an O(1) output by exp(-gap)
only, so their test makes their share the whole output and compares relatively (atol = 0).
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import labkit
from labkit.testing import contract
from labkit.testing.cases import read_only

TOL = {"atol": 1e-12, "rtol": 1e-12}
D = 16  # head dim; sqrt(16) = 4 is exact


# ------------------------------------------------------------------------------------------
# The brute force and the inputs.


def summary_f64(q, k, v):
    """``(m, denom, acc)`` straight from the definition, one key at a time."""
    q, k, v = (np.asarray(x, dtype=np.float64) for x in (q, k, v))
    if len(k) == 0:
        return -math.inf, 0.0, np.zeros(v.shape[1])
    scores = [math.fsum(q * k_i) / math.sqrt(len(q)) for k_i in k]
    m = max(scores)
    weights = [math.exp(s - m) for s in scores]
    denom = math.fsum(weights)
    acc = np.array([math.fsum(w * v_i[j] for w, v_i in zip(weights, v, strict=True)) for j in range(v.shape[1])])
    return m, denom, acc


def random_qkv(seed: int, n: int, d: int = D):
    """Standard-normal q, k, v: scores of order 1, outputs of order 1."""
    rng = np.random.default_rng(seed)
    return rng.standard_normal(d), rng.standard_normal((n, d)), rng.standard_normal((n, d))


def frozen(summary):
    """The summary with its acc read-only: a merge must not write into its arguments."""
    m, denom, acc = summary
    return m, denom, read_only(np.array(acc, dtype=np.float64))


def chunk_summaries(q, k, v, sizes):
    """Brute-force summaries of consecutive chunks of the given sizes (they cover all keys)."""
    bounds = np.cumsum([0, *sizes])  # the sizes add up to len(k): every key in one chunk
    return [frozen(summary_f64(q, k[a:b], v[a:b])) for a, b in zip(bounds[:-1], bounds[1:], strict=True)]


def identity(d: int = D):
    return -math.inf, 0.0, read_only(np.zeros(d))


LAW_OFFSETS = (0.5, 2.0, -1.0, 1.25)  # each key set's scores are shifted by one of these


def law_sets():
    """One query and four disjoint key sets (3, 5, 1 and 4 keys) whose maxima differ and come in no
    particular order: a merge that rescales only one side, or only when the larger max is on a
    given side, gets some pair of them wrong. Returns ``(q, [(k, v), ...])``, fresh every call."""
    rng = np.random.default_rng(42)
    q = rng.standard_normal(D)
    direction = q / np.dot(q, q) * math.sqrt(D)  # adding c * direction to a key adds c to its score
    sets = []
    for size, offset in zip((3, 5, 1, 4), LAW_OFFSETS, strict=True):
        sets.append((rng.standard_normal((size, D)) + offset * direction, rng.standard_normal((size, D))))
    return q, sets


def union_summary(q, sets, which):
    """The truth for merging the sets ``which``: the summary of all their keys at once."""
    k = np.concatenate([sets[i][0] for i in which])
    v = np.concatenate([sets[i][1] for i in which])
    return summary_f64(q, k, v)


def assert_summary_close(actual, expected, what: str):
    """Compare two summaries entry by entry; an identity must come back as exactly -inf, 0, zeros."""
    __tracebackhide__ = True
    try:
        m, denom, acc = actual
    except (TypeError, ValueError):
        raise AssertionError(f"{what}: expected a summary (m, denom, acc), got {actual!r}") from None
    m_exp, denom_exp, acc_exp = expected
    if m_exp == -math.inf:
        labkit.assert_value(m, -math.inf, what=f"{what}: m (the summary of no keys has m = -inf)")
    else:
        labkit.assert_close(m, m_exp, **TOL, what=f"{what}: m (the max score)")
    labkit.assert_close(denom, denom_exp, **TOL, what=f"{what}: denom (sum of exp(s - m), unnormalized)")
    labkit.assert_close(acc, acc_exp, **TOL, axes=("dim",), what=f"{what}: acc (sum of exp(s - m) * v, unnormalized)",
                        dtype=np.float64)


def assert_output_close(out, expected, what: str, atol: float = TOL["atol"]):
    __tracebackhide__ = True
    labkit.assert_close(out, expected, atol=atol, rtol=TOL["rtol"], axes=("dim",), what=what, dtype=np.float64)


# ------------------------------------------------------------------------------------------
# Step 1: attend_partial.


@pytest.mark.parametrize("n", [1, 2, 37])
def test_attend_partial_returns_the_unnormalized_triple(lab, n):
    """attend_partial's triple against the definition: m is the max of q.k/sqrt(d) (not of
    anything else), denom and acc are relative to that m and NOT divided by denom; acc is a
    float64 vector.

    Catches: normalizing inside attend_partial (acc / denom), keeping acc/denom with denom
    set to 1, a max over v or acc instead of the scores, no max subtracted at all, a
    missing 1/sqrt(d)."""
    q, k, v = random_qkv(seed=n, n=n)
    expected = summary_f64(q, k, v)
    q, k, v = read_only(q, k, v)
    assert_summary_close(lab.attend_partial(q, k, v), expected,
                         what=f"attend_partial over {n} key{'' if n == 1 else 's'}")


@pytest.mark.parametrize("dv", [D, 1, 40])
def test_attend_partial_of_zero_keys_is_the_identity(lab, dv):
    """Zero keys give (-inf, 0.0, zeros(dv)), dv the values' width: the summary of nothing, which
    every merge leaves out. Values as wide as the keys (16), and of width 1 and 40.

    Catches: a max over an empty array (numpy raises), m = 0 instead of -inf (wrong as soon as
    real scores are below 0 by ~745: exp underflows), NaN from 0/0, an identity sized by the
    query's d instead of the values' dv (right whenever dv = d)."""
    rng = np.random.default_rng(dv)
    q, k, v = rng.standard_normal(D), np.zeros((0, D)), np.zeros((0, dv))
    expected = summary_f64(q, k, v)  # (-inf, 0.0, zeros(dv))
    q, k, v = read_only(q, k, v)
    what = f"attend_partial over zero keys, keys of width {D}, values of width {dv}"
    m, denom, acc = lab.attend_partial(q, k, v)
    labkit.assert_value(m, -math.inf, what=f"{what}: m")
    labkit.assert_value(denom, 0.0, what=f"{what}: denom")
    labkit.assert_value(np.shape(acc), expected[2].shape, what=f"{what}: acc's shape (one entry per value dimension)")
    assert_output_close(acc, expected[2], what=f"{what}: acc", atol=0.0)


# ------------------------------------------------------------------------------------------
# Step 2: merge_two.


@pytest.mark.parametrize("sizes", [(5, 9), (9, 5), (1, 30), (30, 1)])
def test_merge_two_is_the_summary_of_the_union(lab, sizes):
    """merge_two(summary(A), summary(B)) == summary(A u B), triple for triple: m is the
    shared max, denom and acc rescaled to it and added, nothing divided.

    Catches: adding without rescaling to the shared max, rescaling only one side, dividing
    inside the merge, a min instead of a max, keeping only the side with the larger max."""
    q, k, v = random_qkv(seed=sum(sizes) + sizes[0], n=sum(sizes))
    a, b = chunk_summaries(q, k, v, sizes)
    expected = summary_f64(q, k, v)
    assert_summary_close(lab.merge_two(a, b), expected, what=f"merge_two of chunks {sizes}")


def test_merge_with_the_identity_changes_nothing(lab):
    """merge(identity, a) == a == merge(a, identity) for summaries with any max, a being the
    brute-force summary of a key set.

    Catches: an identity guard that fires when either side is empty instead of both (the
    empty side swallows the real one), NaN from an identity side."""
    q, sets = law_sets()
    for i, (k, v) in enumerate(sets):
        expected = summary_f64(q, k, v)
        assert_summary_close(lab.merge_two(identity(), frozen(expected)), expected,
                             what=f"merge_two(identity, summary of set {i})")
        assert_summary_close(lab.merge_two(frozen(expected), identity()), expected,
                             what=f"merge_two(summary of set {i}, identity)")


def test_merge_of_two_identities_is_the_identity(lab):
    """merge(identity, identity) is the identity, with no NaN: the shared max is -inf and
    exp(-inf - (-inf)) is NaN, so the merge must not compute it.

    Catches: a merge that is not identity-safe (two empty partitions, or the empty start of
    a fold, poison everything after them with NaN)."""
    with np.errstate(invalid="ignore"):  # let a NaN through so the message can show it
        merged = lab.merge_two(identity(), identity())
    assert_summary_close(merged, (-math.inf, 0.0, np.zeros(D)), what="merge_two(identity, identity)")


def test_merge_is_commutative(lab):
    """merge(a, b) and merge(b, a) are both the summary of A u B, for every pair of key sets
    with distinct maxima: thread blocks of a GPU finish in any order. Each side is compared
    with the truth, not only with the other (a wrong merge can be commutative).

    Catches: rescaling only one side (right only when the larger max is on the other side),
    keeping only the side with the larger max (commutative, and wrong)."""
    q, sets = law_sets()
    summaries = [summary_f64(q, k, v) for k, v in sets]
    for i in range(len(sets)):
        for j in range(i + 1, len(sets)):
            expected = union_summary(q, sets, (i, j))
            a, b = frozen(summaries[i]), frozen(summaries[j])
            assert_summary_close(lab.merge_two(a, b), expected, what=f"merge_two(set {i}, set {j})")
            assert_summary_close(lab.merge_two(b, a), expected, what=f"merge_two(set {j}, set {i})")


def test_merge_is_associative(lab):
    """merge(merge(a, b), c) and merge(a, merge(b, c)) are both the summary of A u B u C, for every
    ordered triple of distinct key sets: this is what allows any tree of merges (two-stage
    kernels, cascades). Each bracketing is compared with the truth, not only with the other.

    Catches: rescaling only one side; a merge whose result depends on the bracketing; a lawful
    but wrong merge (keeping the side with the larger max is associative)."""
    q, sets = law_sets()
    summaries = [summary_f64(q, k, v) for k, v in sets]
    for i in range(len(sets)):
        for j in range(len(sets)):
            for n in range(len(sets)):
                if len({i, j, n}) < 3:
                    continue
                expected = union_summary(q, sets, (i, j, n))
                a, b, c = (frozen(summaries[x]) for x in (i, j, n))
                left = lab.merge_two(lab.merge_two(a, b), c)
                right = lab.merge_two(a, lab.merge_two(b, c))
                assert_summary_close(left, expected, what=f"(set {i} . set {j}) . set {n}")
                assert_summary_close(right, expected, what=f"set {i} . (set {j} . set {n})")


def test_merge_two_leaves_its_inputs_alone(lab):
    """merge_two returns a new summary and does not touch its arguments: callers reuse
    summaries (a cascade merges one shared-prefix summary into many requests). This test hands
    over writeable arrays, so that a write shows as a difference, with its place.

    Catches: rescaling acc in place (``acc_a *= ...``), which silently corrupts the next merge
    that uses the same summary. The merged summaries are checked too: leaving the arguments alone
    earns nothing without them."""
    q, sets = law_sets()
    summaries = [summary_f64(q, k, v) for k, v in sets]
    expected = [union_summary(q, sets, (0, 1)), union_summary(q, sets, (2, 3))]
    before = [acc.copy() for _, _, acc in summaries]
    merged = [lab.merge_two(summaries[0], summaries[1]), lab.merge_two(summaries[2], summaries[3])]
    assert_summary_close(merged[0], expected[0], "merge_two(set 0, set 1) of writeable summaries")
    assert_summary_close(merged[1], expected[1], "merge_two(set 2, set 3) of writeable summaries")
    for i, (summary, acc) in enumerate(zip(summaries, before, strict=True)):
        labkit.assert_close(summary[2], acc, atol=0.0, axes=("dim",), what=f"acc of argument {i} after merge_two")


def test_merge_two_returns_new_arrays(lab):
    """The merged summary shares no array with its arguments, including when one side is the
    identity and the answer is the other side's numbers: writing into the result's acc leaves the
    arguments alone, and writing into an argument after the call leaves the result alone.

    Catches: ``if m_a == -inf: return b`` (the caller's own summary handed back: a cascade that
    rescales the merged result in place would rescale a shared prefix's summary too)."""
    q, sets = law_sets()
    summaries = [summary_f64(q, k, v) for k, v in sets]
    empty = (-math.inf, 0.0, np.zeros(D))
    pairs = {"merge_two(identity, set 0)": (empty, summaries[0]), "merge_two(set 0, identity)": (summaries[0], empty),
             "merge_two(set 1, set 2)": (summaries[1], summaries[2])}
    truths = {"merge_two(identity, set 0)": summaries[0], "merge_two(set 0, identity)": summaries[0],
              "merge_two(set 1, set 2)": union_summary(q, sets, (1, 2))}
    for what, pair in pairs.items():
        args = [(m, d, np.array(acc)) for m, d, acc in pair]  # writeable copies
        before = [acc.copy() for _, _, acc in args]
        merged = lab.merge_two(*args)
        assert_summary_close(merged, truths[what], what)
        merged_acc = np.asarray(merged[2])
        kept = merged_acc.copy()
        for i, ((_, _, acc), old) in enumerate(zip(args, before, strict=True)):
            if not np.array_equal(acc, old):
                raise AssertionError(f"{what} changed argument {i}'s acc: merge_two writes into its arguments")
        if merged_acc.flags.writeable:  # a read-only result cannot be written through
            merged_acc[...] = 123.0
            for i, ((_, _, acc), old) in enumerate(zip(args, before, strict=True)):
                if not np.array_equal(acc, old):
                    raise AssertionError(f"{what}: writing into the result's acc changed argument {i}'s acc: the "
                                         "result must be a new summary (acc_a * scale_a + acc_b * scale_b is one), "
                                         "never an argument handed back")
            merged_acc[...] = kept
        for _, _, acc in args:
            acc[...] = -7.0
        if not np.array_equal(merged_acc, kept):
            raise AssertionError(f"{what}: writing into an argument's acc after the call changed the result: the "
                                 "result shares its array")


# An empty summary in the forms engines hand over: no key (denom 0, acc 0), with m -inf (the
# identity), +inf (FlashAttention-2's log-sum-exp of an empty partial), or a finite leftover.
EMPTY_SUMMARIES = {"m = -inf": -math.inf, "m = +inf (FlashAttention-2)": math.inf, "m = 0 (a leftover)": 0.0,
                   "m = -1e30 (a leftover)": -1e30}


@pytest.mark.parametrize("empty_m", list(EMPTY_SUMMARIES.values()), ids=list(EMPTY_SUMMARIES))
def test_an_empty_summary_merges_as_nothing(lab, empty_m):
    """A summary of no key (denom 0, acc zeros) merges as nothing whatever its m holds: with a
    real summary whose scores sit near -1000 (below any leftover m) or near +1000, on either side,
    the result is that real summary; with another empty one, the identity; in merge_partials, among
    real chunks, dense attention, and alone, zeros.

    Catches: an empty summary's m taken at its word (+inf gives exp(inf - inf) = NaN; a leftover 0
    becomes the shared max, and scores near -1000 underflow to nothing)."""
    empty = (empty_m, 0.0, read_only(np.zeros(D)))
    rng = np.random.default_rng(5)
    q = np.zeros(D)
    q[0] = math.sqrt(D)  # scores are exactly the keys' first coordinates
    k, v = rng.standard_normal((12, D)), rng.standard_normal((12, D))
    for level in (-1000.0, 1000.0):
        k[:, 0] = level + rng.uniform(0.0, 3.0, 12)
        real = summary_f64(q, k, v)
        expected_out = labkit.attention_f64(q, k, v)
        with np.errstate(invalid="ignore", over="ignore"):
            assert_summary_close(lab.merge_two(empty, frozen(real)), real,
                                 what=f"merge_two(empty summary with m={empty_m}, keys near {level:+.0f})")
            assert_summary_close(lab.merge_two(frozen(real), empty), real,
                                 what=f"merge_two(keys near {level:+.0f}, empty summary with m={empty_m})")
            parts = chunk_summaries(q, k, v, (5, 7))
            out = lab.merge_partials([empty, parts[0], empty, parts[1]])
        assert_output_close(out, expected_out, what=f"merge_partials of 2 chunks near {level:+.0f} and 2 empty "
                            f"summaries with m={empty_m}")
    with np.errstate(invalid="ignore", over="ignore"):
        both_empty = lab.merge_two(empty, (math.inf, 0.0, read_only(np.zeros(D))))
        assert_summary_close(both_empty, (-math.inf, 0.0, np.zeros(D)),
                             what=f"merge_two(empty with m={empty_m}, empty with m=+inf)")
        out = lab.merge_partials([empty])
    assert_output_close(out, np.zeros(D), atol=0.0, what=f"merge_partials([empty summary with m={empty_m}])")


def _good_summary():
    q, k, v = random_qkv(seed=21, n=6)
    return frozen(summary_f64(q, k, v))


# name: (the summary, a word its ValueError must name). No set of keys gives any of them.
GARBAGE = {
    "NaN m": ((math.nan, 2.0, np.ones(D)), "NaN"),
    "NaN denom": ((0.5, math.nan, np.ones(D)), "NaN"),
    "NaN in acc": ((0.5, 2.0, np.r_[np.ones(D - 1), math.nan]), "NaN"),
    "NaN m of an empty summary": ((math.nan, 0.0, np.zeros(D)), "NaN"),
    "inf denom": ((0.5, math.inf, np.ones(D)), "denom"),
    "negative denom": ((0.5, -1.0, np.ones(D)), "denom"),
    "inf in acc": ((0.5, 2.0, np.r_[np.ones(D - 1), math.inf]), "acc"),
    "m = +inf beside keys": ((math.inf, 2.0, np.ones(D)), "m"),
    "m = -inf beside keys": ((-math.inf, 2.0, np.ones(D)), "m"),
    "no key but acc not zero": ((-math.inf, 0.0, np.ones(D)), "acc"),
    "acc not a vector": ((0.5, 2.0, np.ones((2, D))), "acc"),
    "m not a number": (("half", 2.0, np.ones(D)), "numbers"),
}
PLACES = ["merge_two: a", "merge_two: b", "merge_partials: the only summary", "merge_partials: the first",
          "merge_partials: a later one"]


@pytest.mark.parametrize("place", PLACES)
@pytest.mark.parametrize("garbage", list(GARBAGE))
def test_a_garbage_summary_is_refused(lab, garbage, place):
    """A summary no set of keys can give (NaN anywhere; an infinite or negative denom; inf in acc;
    an infinite m beside keys; acc without keys; an acc that is not a vector; an m that is no number) is a
    ValueError that names what is wrong, wherever
    it comes: either side of merge_two, the only, the first or a later summary of merge_partials.
    Each function first works on the same place with a good summary.

    Catches: merge_partials that reads its first summary without ``_as_summary`` (merge_two checks
    only what it is given), checks dropped: NaN comes out as a silent NaN answer, an acc of shape
    [2, d] as a silent [2, d] output, an m given as a string as a TypeError from deep inside."""
    summary, word = GARBAGE[garbage]
    summary = (summary[0], summary[1], read_only(np.array(summary[2])))
    good, other = _good_summary(), _good_summary()

    def call(s):
        if place == "merge_two: a":
            return lab.merge_two(s, other)
        if place == "merge_two: b":
            return lab.merge_two(other, s)
        if place == "merge_partials: the only summary":
            return lab.merge_partials([s])
        if place == "merge_partials: the first":
            return lab.merge_partials([s, other])
        return lab.merge_partials([other, identity(), s])

    call(good)
    try:
        with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
            got = call(summary)
    except ValueError as err:
        if word in str(err):
            return
        raise AssertionError(f"{place} with a summary whose {garbage}: the ValueError must name {word!r}, got: "
                             f"{err}") from None
    except NotImplementedError:
        raise
    except Exception as err:  # noqa: BLE001 (the test reports whatever was raised)
        raise AssertionError(f"{place} with a summary whose {garbage}: expected a ValueError naming {word!r}, got "
                             f"{type(err).__name__}: {err}") from None
    hint = ("merge_partials reads partials[0] itself: pass it through _as_summary (merge_two checks only the "
            "summaries it is given)" if place.startswith("merge_partials") else
            "keep the given _as_summary calls at the top of merge_two")
    raise AssertionError(f"{place} with a summary whose {garbage}: no ValueError, the answer was {got!r}; {hint}")


def _big_summary(field: str, big: float, m: float = 0.0):
    """A summary whose ``acc`` (one entry) or ``denom`` is ``big``, the rest of ``acc`` 0.5: near float64's top
    (1.797e308), yet a summary some key set gives (one key of value ``big``; ``big`` keys)."""
    acc = np.full(D, 0.5)
    if field == "acc":
        acc[3] = big
        return m, 1.0, read_only(acc)
    return m, big, read_only(acc)


def _merged_by_definition(summaries):
    """The merge of the given numbers by its definition, in Python floats (the truth for merge_two)."""
    top = max(m for m, _, _ in summaries)
    return (top, math.fsum(denom * math.exp(m - top) for m, denom, _ in summaries),
            np.array([math.fsum(acc[j] * math.exp(m - top) for m, _, acc in summaries) for j in range(D)]))


@pytest.mark.parametrize("field", ["acc", "denom"])
def test_a_merge_past_float64s_range_is_refused(lab, field):
    """Two summaries whose ``acc`` (or ``denom``) add up past float64's range, each one valid (one key whose
    value is 1e308; 1e308 keys): the merged sum, 2e308 with equal maxima, is no float64, so merge_two
    refuses them with a ValueError naming the field and the overflow, given in ``_check_merge_fits``. Just
    below the top, 8e307 and 8e307 (the second side 1.5 below), the merge goes ahead, equal to its
    definition (relative 1e-12: the numbers are large, not inexact).

    Catches: a merge without the overflow check, which hands back an inf that the next merge refuses as
    garbage, far from the cause (or that merge_partials divides into an inf output)."""
    fits = [_big_summary(field, 8e307), _big_summary(field, 8e307, m=-1.5)]
    assert_summary_close(lab.merge_two(*fits), _merged_by_definition(fits),
                         what=f"merge_two of two summaries whose {field} is 8e307 (the sum fits float64)")
    past = [_big_summary(field, 1e308), _big_summary(field, 1e308)]
    with np.errstate(over="ignore"):
        labkit.assert_refused(lambda: lab.merge_two(*past), f"{field} overflows",
                              what=f"merge_two of two summaries whose {field} is 1e308, equal maxima (the merged "
                                   f"{field} would be 2e308, past float64's 1.8e308)",
                              hint="keep the given _check_merge_fits call at the top of merge_two")


def test_merge_partials_past_float64s_range_never_answers_inf(lab):
    """Three summaries whose acc holds 7e307 at one entry, equal maxima: the output over all their keys is
    7e307 there, but the merged acc (2.1e308) is past float64's range. merge_partials refuses them (a
    ValueError that says what overflows) or answers the exact output; never an inf. Two of them (1.4e308)
    merge and divide as usual.

    Catches: a merge without the overflow check (the fold's acc becomes inf, and so does the output)."""
    two = [_big_summary("acc", 7e307) for _ in range(2)]
    expected = np.full(D, 0.5)
    expected[3] = 7e307  # each summary's acc / denom, equal for all: their average is the same
    assert_output_close(lab.merge_partials(two), expected, atol=0.0,  # relative: 7e307 is large, not inexact
                        what="merge_partials of two summaries whose acc is 7e307 (1.4e308 merged: fits float64)")
    three = [*two, _big_summary("acc", 7e307)]
    try:
        with np.errstate(over="ignore", invalid="ignore"):
            out = lab.merge_partials(three)
    except ValueError as err:
        if "overflow" in str(err):
            return
        raise AssertionError(f"merge_partials of three summaries whose acc is 7e307: a ValueError that does not "
                             f"say what overflows: {err}") from None
    assert_output_close(out, expected, atol=0.0, what="merge_partials of three summaries whose acc is 7e307 (2.1e308 "
                        "merged, past float64's range): refuse them (the given _check_merge_fits in merge_two) or "
                        "answer the exact output, never inf")


# ------------------------------------------------------------------------------------------
# Step 3: merge_partials.


def test_merge_partials_matches_dense_attention(lab):
    """merge_partials of the summaries of disjoint chunks (identities mixed in) equals dense
    attention over all the keys: merge everything, divide once.

    Catches: averaging normalized partial outputs, dividing each partial before merging,
    dividing by the number of partials, an identity that is not neutral."""
    q, k, v = random_qkv(seed=11, n=63)
    expected = labkit.attention_f64(q, k, v)
    partials = chunk_summaries(q, k, v, (1, 5, 17, 40))
    partials = [identity(), partials[0], partials[1], identity(), partials[2], partials[3]]
    assert_output_close(lab.merge_partials(partials), expected,
                        what="merge_partials of 4 chunk summaries and 2 identities (63 keys)")


@pytest.mark.parametrize("count", [1, 3])
def test_merge_partials_leaves_its_inputs_alone(lab, count):
    """merge_partials does not touch its summaries, here handed over writeable so that a write shows: one
    summary alone (nothing to merge, so the acc to divide is the caller's own array) and three. The output
    is dense attention over their keys: leaving the inputs alone earns nothing without it.

    Catches: the final division done in place (``acc /= denom``) on the caller's acc, made writeable first
    where it came read-only; the caller's summary then holds a normalized acc, and merging it again is
    wrong."""
    q, k, v = random_qkv(seed=30 + count, n=12)
    expected = labkit.attention_f64(q, k, v)
    sizes = {1: (12,), 3: (2, 7, 3)}[count]
    partials = [(m, denom, np.array(acc)) for m, denom, acc in chunk_summaries(q, k, v, sizes)]  # writeable copies
    before = [acc.copy() for _, _, acc in partials]
    out = lab.merge_partials(partials)
    assert_output_close(out, expected, what=f"merge_partials of {count} writeable summar{'y' if count == 1 else 'ies'}")
    for i, ((_, _, acc), old) in enumerate(zip(partials, before, strict=True)):
        labkit.assert_close(acc, old, atol=0.0, axes=("dim",), what=f"acc of summary {i} after merge_partials of "
                            f"{count} (divided in place?)")


def test_merge_partials_of_no_keys_is_zeros(lab):
    """No keys at all, as one identity, several identities or an empty list: zeros, never NaN.

    Catches: dividing 0 by 0, a merge that is not identity-safe, a crash on an empty list."""
    with np.errstate(invalid="ignore", divide="ignore"):
        for count in (1, 3):
            out = lab.merge_partials([identity()] * count)
            assert_output_close(out, np.zeros(D), atol=0.0,
                                what=f"merge_partials of {count} identit{'y' if count == 1 else 'ies'} "
                                     "(no key seen: the merged denom is 0)")
        out = np.asarray(lab.merge_partials([]), dtype=np.float64)
    if out.size == 0 or not np.all(out == 0.0):
        raise AssertionError(f"merge_partials([]): got {out}, expected zeros (attention over no key)")


# ------------------------------------------------------------------------------------------
# Step 4: partitioned_attention.


def _dense_and_frozen(seed, n):
    """Random q, k, v, read-only, and dense attention over them, computed first."""
    q, k, v = random_qkv(seed=seed, n=n)
    expected = labkit.attention_f64(q, k, v)
    return (*read_only(q, k, v), expected)


def test_one_partition_is_just_attention(lab):
    """One partition: summarize, then normalize. Necessary, not sufficient: averaging
    normalized outputs also passes this test (one output averages to itself).

    Catches: a missing 1/sqrt(d), normalizing twice, a wrong final division."""
    q, k, v, expected = _dense_and_frozen(1, 50)
    assert_output_close(lab.partitioned_attention(q, k, v, 1), expected, what="1 partition")


@pytest.mark.parametrize("num_partitions", [2, 3, 7, 32, 100])
def test_any_partition_count_matches_dense(lab, num_partitions):
    """257 keys in 2 to 100 partitions (uneven chunks of 2 to 129 keys): every count gives
    dense attention to rounding. Splitting is exact, not an approximation.

    Catches: averaging outputs, dropping a denominator, merging without rescaling, dropping
    the remainder keys when the count does not divide 257."""
    q, k, v, expected = _dense_and_frozen(num_partitions, 257)
    assert_output_close(lab.partitioned_attention(q, k, v, num_partitions), expected,
                        what=f"partitioned_attention, 257 keys in {num_partitions} partitions")


@pytest.mark.parametrize("dtype", ["int64", "int32", "uint8", "uint64"])
def test_a_partition_count_of_a_numpy_integer_type(lab, dtype):
    """A partition count given as a numpy integer (np.int64(3) and the like: what arithmetic on numpy arrays
    hands back, ``np.ceil(n / 512).astype(int)``) is an integer like any other: 37 keys in 3 and in 50
    partitions give dense attention.

    Catches: a check that takes ``isinstance(num_partitions, int)`` for "an integer" and refuses every numpy
    integer."""
    q, k, v, expected = _dense_and_frozen(37, 37)
    for count in (3, 50):
        num_partitions = np.dtype(dtype).type(count)
        assert_output_close(lab.partitioned_attention(q, k, v, num_partitions), expected,
                            what=f"37 keys, num_partitions = np.{dtype}({count})")


@pytest.mark.parametrize(("n", "num_partitions"), [(1, 4), (5, 8), (6, 64), (40, 40), (40, 41), (3, 10**12)])
def test_more_partitions_than_keys(lab, n, num_partitions):
    """More partitions than keys: at most one chunk per key can be non-empty, and the output is dense
    attention. Any count is valid, 10**12 included: the extra chunks are empty, so they need not be
    cut at all (np.array_split would first list 10**12 chunk sizes).

    Catches: a crash or NaN on an empty chunk; a list of 10**12 chunks (a MemoryError)."""
    q, k, v, expected = _dense_and_frozen(n, n)
    out_of_memory = False
    with np.errstate(invalid="ignore", divide="ignore"):
        try:
            out = lab.partitioned_attention(q, k, v, num_partitions)
        except MemoryError:
            out_of_memory = True  # failed below, outside the handler: the message alone, not a chain of tracebacks
    if out_of_memory:
        pytest.fail(f"partitioned_attention({n} keys, num_partitions={num_partitions}) ran out of memory: "
                    f"at most {n} chunks are non-empty, so split into min(num_partitions, n) chunks", pytrace=False)
    assert_output_close(out, expected, what=f"{n} keys, {num_partitions} partitions")


@pytest.mark.parametrize("dv", [D, 1, 40])
@pytest.mark.parametrize("num_partitions", [1, 3])
def test_zero_keys_gives_zeros(lab, num_partitions, dv):
    """A sequence with no keys attends to nothing: zeros of shape [dv], as wide as the values, never
    NaN. Values as wide as the keys (16), and of width 1 and 40.

    Catches: 0/0, a crash on the max of nothing, a result of the wrong shape, zeros sized by the
    query's d instead of the values' dv (right whenever dv = d)."""
    rng = np.random.default_rng(dv)
    q, k, v = rng.standard_normal(D), np.zeros((0, D)), np.zeros((0, dv))
    expected = np.zeros(dv)  # attention over no key
    q, k, v = read_only(q, k, v)
    what = f"zero keys, keys of width {D}, values of width {dv}, {num_partitions} partitions"
    with np.errstate(invalid="ignore", divide="ignore"):
        out = lab.partitioned_attention(q, k, v, num_partitions)
    labkit.assert_value(np.shape(out), expected.shape,
                        what=f"{what}: the output's shape (one entry per value dimension)")
    assert_output_close(out, expected, what=what, atol=0.0)


@pytest.mark.parametrize(("n", "num_partitions"), [(10, 3), (5, 8), (257, 7), (40, 41), (20, 10**12)])
def test_partitioned_attention_summarizes_each_chunk(lab, monkeypatch, n, num_partitions):
    """partitioned_attention really splits: it calls attend_partial once per non-empty chunk of
    np.array_split, in chunk sizes n // P + 1 (the first n % P) and n // P, and merges.
    On a GPU each of these calls is one thread block.

    Catches: ignoring num_partitions (dense attention is the right output, but nothing is
    split), a hand-rolled split that drops or duplicates keys."""
    q, k, v = read_only(*random_qkv(seed=n, n=n))
    sizes = []
    attend_partial = lab.attend_partial

    def recording_attend_partial(q, k, v):
        sizes.append(len(k))
        return attend_partial(q, k, v)

    # partitioned_attention looks attend_partial up in its module when it runs: it finds this one.
    monkeypatch.setattr(lab, "attend_partial", recording_attend_partial)
    lab.partitioned_attention(q, k, v, num_partitions)
    # np.array_split's non-empty chunks; past n partitions only empty ones are added, so n stands for 10**12.
    expected = [len(chunk) for chunk in np.array_split(np.arange(n), min(num_partitions, n)) if len(chunk)]
    non_empty = [size for size in sizes if size]  # calling it on empty chunks too is harmless
    labkit.assert_value(non_empty, expected, what=f"{n} keys in {num_partitions} partitions: the sizes of the "
                        f"non-empty chunks attend_partial saw (np.array_split's; all it saw: {sizes})")


def test_merge_is_order_invariant(lab):
    """The same nine summaries merged forward, reversed and in shuffled orders give dense
    attention every time.

    Catches: rescaling only one side (right only in the orders where the global max comes
    first), any merge that depends on the order."""
    q, k, v = random_qkv(seed=9, n=90)
    expected = labkit.attention_f64(q, k, v)
    partials = chunk_summaries(q, k, v, (10,) * 9)
    rng = np.random.default_rng(0)
    orders = [list(range(9)), list(range(9))[::-1]] + [list(rng.permutation(9)) for _ in range(4)]
    for order in orders:
        out = lab.merge_partials([partials[i] for i in order])
        assert_output_close(out, expected, what=f"merge_partials in order {order}")


def test_merge_is_hierarchical(lab):
    """Merged summaries merge again: a balanced tree of merge_two over eight chunks is the
    summary of all the keys, and merge_partials of uneven groups' merges is dense attention.
    This is the licence for two-stage reductions and cascade attention.

    Catches: a merge whose output is not a summary of the same kind as its inputs (a
    normalized acc, a dropped denom), a merge that depends on the bracketing."""
    q, k, v = random_qkv(seed=8, n=80)
    expected_summary, expected = summary_f64(q, k, v), labkit.attention_f64(q, k, v)
    leaves = chunk_summaries(q, k, v, (3, 17, 8, 12, 1, 20, 9, 10))
    level = leaves
    while len(level) > 1:
        level = [lab.merge_two(level[i], level[i + 1]) for i in range(0, len(level), 2)]
    assert_summary_close(level[0], expected_summary, what="balanced tree of merge_two over 8 chunks")

    groups = [leaves[0:1], leaves[1:4], leaves[4:8]]
    group_summaries = []
    for group in groups:
        merged = group[0]
        for summary in group[1:]:
            merged = lab.merge_two(merged, summary)
        group_summaries.append(merged)
    assert_output_close(lab.merge_partials(group_summaries), expected, what="merge_partials of merged groups")


# Score layouts of 40 keys (scores are exactly k[:, 0]), each crossing the partitions' boundaries in
# its own way. With 5 partitions the chunks are 0-7, 8-15, ..., 32-39; with 7, 0-5, 6-11, 12-17,
# 18-23, 24-29, 30-34, 35-39 (np.array_split: the first n % P chunks one key longer). Key 24 starts a
# chunk in both.
def _scores(case: str, rng, n: int = 40) -> np.ndarray:
    first = 3.0 * rng.standard_normal(n)
    if case == "all near +1000":
        return 1000.0 + first
    if case == "all near -1000":
        return -1000.0 + first
    if case == "one partition at +1000":
        first[16:24] += 1000.0  # the third of 5 partitions; across the third and fourth of 7
        return first
    if case == "one partition 1000 below the rest":
        first[16:24] -= 1000.0
        return first
    hot = {"the top key alone in the first partition": 2, "the top key alone in the last partition": 38,
           "the top key first in its partition, the rest near -1000": 24}[case]
    if case.endswith("near -1000"):
        first -= 1000.0
    first[hot] = 1000.0 + rng.uniform()
    return first


EXTREME_CASES = ["all near +1000", "all near -1000", "one partition at +1000", "one partition 1000 below the rest",
                 "the top key alone in the first partition", "the top key alone in the last partition",
                 "the top key first in its partition, the rest near -1000"]


@pytest.mark.parametrize("num_partitions", [5, 7], ids=["5 partitions of 8", "7 partitions of 6 or 5"])
@pytest.mark.parametrize("case", EXTREME_CASES)
def test_extreme_scores_do_not_overflow(lab, case, num_partitions):
    """Scores of about +-1000, past float64's exp range (exp overflows above ~709.8 and
    underflows to 0 below ~-745), in 5 partitions and in 7 (which do not divide 40 keys): all keys
    near +1000 or -1000; one partition 1000 above or below the rest; the top key alone in the first
    partition, in the last, or first in its partition with every other key 1000 below. Finite and
    equal to dense attention.

    Catches: exponentials of raw scores without the max subtracted (exp(1000) = inf, or
    exp(-1000) = 0 and 0/0), a merge that exponentiates the maxima themselves, a merge whose
    reference is one side's max (the accumulator's, or the newcomer's) instead of the larger."""
    rng = np.random.default_rng(3)
    n = 40
    q = np.zeros(D)
    q[0] = math.sqrt(D)  # so q . k / sqrt(d) is exactly k[0]
    k = rng.standard_normal((n, D))
    v = rng.standard_normal((n, D))
    k[:, 0] = _scores(case, rng, n)
    expected = labkit.attention_f64(q, k, v)
    q, k, v = read_only(q, k, v)
    with np.errstate(over="ignore", invalid="ignore", divide="ignore", under="ignore"):
        out = lab.partitioned_attention(q, k, v, num_partitions)
    assert_output_close(out, expected, what=f"scores {case}, {num_partitions} partitions")


@pytest.mark.parametrize("pattern", list(contract.SCORE_PATTERNS))
def test_contract_score_patterns_at_every_key_count(lab, pattern):
    """The score patterns of ``labkit.testing.contract`` (a segment being one partition's chunk) at
    every key count that matters to ``np.array_split`` over 4 and 7 partitions (``boundary_lengths``
    with the partition count as the unit: 0 and 1 key, one key fewer than partitions, one each, one
    more; each side of 3 keys per partition; a count that divides into neither): flat near +1000 or
    -1000, one key 100 above the rest in the first or the last chunk, the mass in a middle chunk, the
    first chunk near -1000, and (with 7 partitions, an odd index) the whole query near -1000 rather than
    +1000. Dense attention, finite.

    Catches, on every count at once: exponentials of raw scores (``no_max_subtraction``), a merge that
    keeps the larger side's sums without rescaling the other (``keeps_larger_max_side``), empty chunks
    that crash (``empty_chunks_crash``), remainder keys dropped (``drops_remainder_keys``)."""
    rng = np.random.default_rng(len(pattern))
    for num_partitions in (4, 7):
        for name, n in contract.boundary_lengths(num_partitions, segment=3 * num_partitions).items():
            chunk = max(1, math.ceil(n / num_partitions))
            q = np.zeros(D)
            q[0] = math.sqrt(D)  # q . k / sqrt(d) is exactly k[0]
            k, v = rng.standard_normal((n, D)), rng.standard_normal((n, D))
            k[:, 0] = contract.score_levels(pattern, n, chunk, index=num_partitions) + rng.uniform(-3, 3, n)
            expected = labkit.attention_f64(q, k, v)
            q, k, v = read_only(q, k, v)
            with np.errstate(over="ignore", invalid="ignore", divide="ignore", under="ignore"):
                out = lab.partitioned_attention(q, k, v, num_partitions)
            assert_output_close(out, expected, what=f"{n} keys ({name}, the unit being the partition count) in "
                                f"{num_partitions} partitions, scores {pattern} ({contract.SCORE_PATTERNS[pattern]})")


@pytest.mark.parametrize("case", ["values near 1e308", "scores near 1e304"])
def test_inputs_near_the_top_of_float64s_range(lab, case):
    """Valid inputs as large as float64 allows: values of 1e307 to 2e307, whose sum over 16 values of
    one key overflows but whose weighted sum over 6 keys (acc) does not; and entries of 1e152, whose
    scores are 1e304 and finite. The output is still the brute force's, to rounding.

    Catches: an overflow check that refuses more than overflows (the sum of all of v, or of a key's
    values, in place of acc's bound: the sum of each value dimension over the keys)."""
    rng = np.random.default_rng(7)
    q, k, v = random_qkv(seed=7, n=6)
    if case == "values near 1e308":
        v = rng.uniform(1.0, 2.0, (6, D)) * 1e307
    else:
        q, k = q * 1e152, k * 1e152
    expected_summary = summary_f64(q, k, v)
    expected = labkit.attention_f64(q, k, v)
    q, k, v = read_only(q, k, v)
    assert_summary_close(lab.attend_partial(q, k, v), expected_summary, what=f"attend_partial, {case}")
    assert_output_close(lab.partitioned_attention(q, k, v, 3), expected, what=f"partitioned_attention, {case}",
                        atol=0.0)  # relative: the outputs are of order 1e307


# How far below the top score the far keys sit: past the gaps of the other tests (a few units, or 100 and
# more where exp(-gap) is far below any O(1) tolerance), below exp's underflow at ~745.
FAR_GAPS = (30, 80, 300, 700)
# Where the 4 far keys sit beside the 4 top keys, and the partition count that puts them there.
FAR_PLACES = {"a partition of their own, after the top's": 2, "a partition of their own, before the top's": 2,
              "the top keys' partitions, interleaved": 2}


@pytest.mark.parametrize("place", list(FAR_PLACES))
@pytest.mark.parametrize("gap", FAR_GAPS)
def test_keys_far_below_the_top_still_count(lab, gap, place):
    """Keys whose scores sit 30 to 700 below the top score weigh exp(-gap) (1e-13 down to 1e-304) against
    it: far below what an O(1) tolerance sees, yet float64 carries that share exactly. Here the top keys'
    values are 0, so the whole output is the far keys' share, and it must match the brute force to a
    relative 1e-12 (each step rounds in float64; the exponent m_b - m is exact to gap * 1.1e-16). The far
    keys come in a partition of their own (the merge weighs them) or interleaved with the top keys (each
    attend_partial weighs them), and merge_two of the brute-force summaries of the two key sets is the
    brute-force summary of all.

    Catches: a merge that skips a side far below the shared max as negligible (a factor below exp(-20),
    2e-9, is not negligible in float64), an attend_partial that drops the weights of keys far below its max."""
    rng = np.random.default_rng(gap)
    q = np.zeros(D)
    q[0] = math.sqrt(D)  # q . k / sqrt(d) is exactly k[0]
    top_k, far_k = rng.standard_normal((4, D)), rng.standard_normal((4, D))
    top_k[:, 0], far_k[:, 0] = rng.uniform(0.0, 1.0, 4), rng.uniform(0.0, 1.0, 4) - gap
    top_v, far_v = np.zeros((4, D)), rng.uniform(1.0, 2.0, (4, D))  # one sign: the far share does not cancel
    if place.endswith("after the top's"):
        order = [0, 1, 2, 3, 4, 5, 6, 7]  # 0-3 the top keys, 4-7 the far ones
    elif place.endswith("before the top's"):
        order = [4, 5, 6, 7, 0, 1, 2, 3]
    else:
        order = [0, 4, 1, 5, 2, 6, 3, 7]
    k, v = np.concatenate([top_k, far_k])[order], np.concatenate([top_v, far_v])[order]
    expected = labkit.attention_f64(q, k, v)
    what = f"4 keys {gap} below the top, in {place}, with the top keys' values 0"
    if not place.startswith("the top keys'"):
        halves = [summary_f64(q, k[:4], v[:4]), summary_f64(q, k[4:], v[4:])]
        expected_summary = summary_f64(q, k, v)
        m, denom, acc = lab.merge_two(*(frozen(s) for s in halves))
        labkit.assert_close(m, expected_summary[0], atol=0.0, rtol=TOL["rtol"], what=f"merge_two, {what}: m")
        labkit.assert_close(denom, expected_summary[1], atol=0.0, rtol=TOL["rtol"], what=f"merge_two, {what}: denom")
        labkit.assert_close(acc, expected_summary[2], atol=0.0, rtol=TOL["rtol"], axes=("dim",), dtype=np.float64,
                            what=f"merge_two, {what}: acc, the far keys' share exp(-{gap}) * acc_far (skipped as "
                                 "negligible?)")
    q, k, v = read_only(q, k, v)
    with np.errstate(under="ignore"):
        out = lab.partitioned_attention(q, k, v, FAR_PLACES[place])
    labkit.assert_close(out, expected, atol=0.0, rtol=TOL["rtol"], axes=("dim",), dtype=np.float64,
                        what=f"partitioned_attention, {what} (relative: the output is the far keys' share, of order "
                             f"exp(-{gap}); their weights dropped?)")


@pytest.mark.parametrize("dv", [1, 5, 40])
def test_values_narrower_or_wider_than_the_keys(lab, dv):
    """Values of another width than the keys (v [n, dv], dv = 1, 5 or 40 with d = 16): the summary's
    acc, the identity's, the merge's and every output are [dv], zero keys included.

    Catches: the identity, or the zeros of no key, sized by the query's d instead of the values'
    dv (right whenever dv = d, as in every other test)."""
    rng = np.random.default_rng(dv)
    q, k, v = rng.standard_normal(D), rng.standard_normal((23, D)), rng.standard_normal((23, dv))
    expected, expected_summary = labkit.attention_f64(q, k, v), summary_f64(q, k, v)
    q, k, v = read_only(q, k, v)
    assert_summary_close(lab.attend_partial(q, k, v), expected_summary, what=f"attend_partial, values of width {dv}")
    m, denom, acc = lab.attend_partial(q, k[:0], v[:0])
    labkit.assert_value(np.shape(acc), (dv,), what=f"attend_partial over zero keys, values of width {dv}: acc's shape")
    for partitions in (1, 4, 30):
        assert_output_close(lab.partitioned_attention(q, k, v, partitions), expected,
                            what=f"partitioned_attention, values of width {dv}, {partitions} partitions")
    out = lab.partitioned_attention(q, k[:0], v[:0], 3)
    labkit.assert_value(np.shape(out), (dv,), what=f"partitioned_attention over zero keys, values of width {dv}: "
                        "the output's shape")


@pytest.mark.parametrize("dtype", ["float32", "float16", "int64", "list"])
def test_inputs_of_any_number_type_give_float64(lab, dtype):
    """q, k, v given as float32, float16, integers or nested lists: every result is float64 and
    equals the float64 computation on the same numbers (the given checks convert them first).

    Catches: arithmetic in the inputs' own dtype (float16 keeps 11 bits: outputs off by 1e-3)."""
    rng = np.random.default_rng(7)
    q, k, v = rng.standard_normal(D), rng.standard_normal((19, D)), rng.standard_normal((19, D))
    if dtype == "int64":
        q, k, v = (np.round(3 * x).astype(np.int64) for x in (q, k, v))
    elif dtype != "list":
        q, k, v = (x.astype(dtype) for x in (q, k, v))
    exact = [np.asarray(x, dtype=np.float64) for x in (q, k, v)]  # the numbers the inputs hold
    expected, expected_summary = labkit.attention_f64(*exact), summary_f64(*exact)
    args = [x.tolist() for x in (q, k, v)] if dtype == "list" else read_only(q, k, v)
    assert_summary_close(lab.attend_partial(*args), expected_summary, what=f"attend_partial of {dtype} inputs")
    assert_output_close(lab.partitioned_attention(*args, 3), expected, what=f"partitioned_attention of {dtype} inputs")


# ------------------------------------------------------------------------------------------
# Bad input.


def _bad_input_case():
    q, k, v = read_only(*random_qkv(seed=4, n=6))
    a = frozen(summary_f64(q, k[:3], v[:3]))
    b = frozen(summary_f64(q, k[3:], v[3:]))
    return q, k, v, a, b


def _good_call(lab, function, case):
    """A valid call of ``function``: a check that rejects everything is no check."""
    q, k, v, a, b = case
    if function == "partitioned_attention":
        lab.partitioned_attention(q, k, v, 2)
    elif function == "merge_partials":
        lab.merge_partials([a, b])
    elif function == "attend_partial":
        lab.attend_partial(q, k, v)
    else:
        lab.merge_two(a, b)


def _poisoned(x, value):
    """A copy of ``x`` with ``value`` in one entry (garbage from upstream, which must not pass silently)."""
    x = np.array(x)
    x[-1, 1] = value
    return x


# name: (function, the bad call, a word the ValueError's message must contain)
BAD_INPUTS = {
    "zero-partitions": ("partitioned_attention", lambda lab, c: lab.partitioned_attention(*c[:3], 0),
                        "num_partitions"),
    "fractional-partitions": ("partitioned_attention", lambda lab, c: lab.partitioned_attention(*c[:3], 2.5),
                              "num_partitions"),
    # True is an int to isinstance, but no count of partitions.
    "bool-partitions": ("partitioned_attention", lambda lab, c: lab.partitioned_attention(*c[:3], True),
                        "num_partitions"),
    "k-wrong-head-size": ("partitioned_attention", lambda lab, c: lab.partitioned_attention(
        c[0], c[1][:, :-1], c[2], 2), "k must"),
    # Zero keys: no chunk is summarized, so attend_partial never sees k; only partitioned_attention's
    # own check stands between a k of the wrong head size and a silent zeros(dv).
    "zero-keys-k-wrong-head-size": ("partitioned_attention", lambda lab, c: lab.partitioned_attention(
        c[0], read_only(np.zeros((0, D - 1))), read_only(np.zeros((0, D))), 2), "k must"),
    "v-wrong-length": ("attend_partial", lambda lab, c: lab.attend_partial(c[0], c[1], c[2][:-1]), "v must"),
    "q-not-a-vector": ("attend_partial", lambda lab, c: lab.attend_partial(c[0][None], c[1], c[2]), "q must"),
    "q-empty": ("attend_partial", lambda lab, c: lab.attend_partial(
        read_only(np.zeros(0)), read_only(np.zeros((6, 0))), c[2]), "q must"),
    # The message must name k: NaN or inf let in here is refused later, as a summary's, far from its cause.
    "nan-in-k": ("attend_partial", lambda lab, c: lab.attend_partial(c[0], read_only(_poisoned(c[1], math.nan)), c[2]),
                 "k holds"),
    "inf-in-k": ("partitioned_attention", lambda lab, c: lab.partitioned_attention(
        c[0], read_only(_poisoned(c[1], math.inf)), c[2], 2), "k holds"),
    # Finite entries whose products or sums overflow: the summary would be inf or NaN, refused far from its cause.
    "score-overflows": ("attend_partial", lambda lab, c: lab.attend_partial(
        read_only(c[0] * 1e200), read_only(c[1] * 1e200), c[2]), "overflow"),
    # Each product finite (1e308), their sum over the head dimension not.
    "score-sum-overflows": ("attend_partial", lambda lab, c: lab.attend_partial(
        read_only(np.full(D, 1e154)), read_only(np.full((6, D), 1e154)), c[2]), "overflow"),
    "acc-overflows": ("partitioned_attention", lambda lab, c: lab.partitioned_attention(
        c[0], c[1], read_only(np.full_like(c[2], 1e308)), 2), "overflow"),
    "partials-not-a-list": ("merge_partials", lambda lab, c: lab.merge_partials(42), "partials"),
    "not-a-summary": ("merge_two", lambda lab, c: lab.merge_two(c[3], (0.0, 1.0)), "summary"),
    "acc-lengths-differ": ("merge_two", lambda lab, c: lab.merge_two(c[3], (0.0, 1.0, np.zeros(4))), "acc"),
    "acc-of-length-1": ("merge_two", lambda lab, c: lab.merge_two(c[3], (0.0, 1.0, np.zeros(1))), "acc"),
}


@pytest.mark.parametrize("name", list(BAD_INPUTS))
def test_bad_input_gets_a_clear_message(lab, name):
    """Wrong shapes, partition counts and summaries raise ValueError naming the problem, not a
    numpy traceback from deep inside or, worse, a silently wrong answer (numpy broadcasts an acc
    of length 1 against any other). The checks are given in starter.py, called at the top of each
    function; each function must first work on good input.

    Catches: a merge without the acc length check (numpy broadcasting answers nonsense), a q of
    no dimension, NaN or inf in q, k or v taken in (they come out as a silent NaN), merge_partials
    given something that is not a list of summaries failing with a TypeError from inside, checks
    dropped from a function (partitioned_attention leaving them to attend_partial, which never runs
    when there are zero keys)."""
    case = _bad_input_case()
    function, bad_call, word = BAD_INPUTS[name]
    _good_call(lab, function, case)
    hint = "the checks given in starter.py (merge_two: _check_same_length) are called at the top of each function"
    if name.startswith("zero-keys"):
        hint = ("partitioned_attention calls _as_query_keys_values itself: with zero keys no chunk reaches "
                "attend_partial, whose checks would otherwise reject this k")
    labkit.assert_refused(lambda: bad_call(lab, case), word, what=f"{function} ({name})", hint=hint)


def test_a_head_size_of_one(lab):
    """d = 1, the smallest head size the checks accept (``q [d]`` with d >= 1): the summary, the
    split and the merge are those of any other size, against the brute force.

    Catches: a check on q that refuses d = 1 with the d = 0 it is meant for."""
    rng = np.random.default_rng(1)
    q, k, v = rng.standard_normal(1), rng.standard_normal((9, 1)), rng.standard_normal((9, 3))
    expected, expected_summary = labkit.attention_f64(q, k, v), summary_f64(q, k, v)
    q, k, v = read_only(q, k, v)
    assert_summary_close(lab.attend_partial(q, k, v), expected_summary, what="attend_partial, head size d = 1")
    assert_output_close(lab.partitioned_attention(q, k, v, 4), expected,
                        what="partitioned_attention, head size d = 1, 4 partitions")


@pytest.mark.parametrize("form", ["list", "float32", "int64", "a generator of summaries"])
def test_summaries_in_any_number_form_merge_in_float64(lab, form):
    """Summaries whose acc is a list, float32 or integers, and partials handed over as a generator
    rather than a list: merge_two and merge_partials read them as the float64 numbers they hold
    (the given ``_as_summary`` converts them), and every result is float64, one summary alone
    included.

    Catches: an acc kept in its own dtype (merge_partials of one float32 summary answers float32;
    float16 would keep 11 bits), a list acc used as is, partials indexed without making them a
    list first (a generator has no ``[0]``)."""
    q, k, v = random_qkv(seed=12, n=20)
    expected = labkit.attention_f64(q, k, v)
    truths = [summary_f64(q, k[a:b], v[a:b]) for a, b in ((0, 7), (7, 20))]

    def as_form(summary):
        m, denom, acc = summary
        if form == "list":
            return m, denom, acc.tolist()
        if form == "float32":
            return m, denom, read_only(acc.astype(np.float32))
        if form == "int64":
            return m, denom, read_only(np.round(acc).astype(np.int64))  # other numbers: the truth takes them
        return m, denom, read_only(acc.copy())

    given = [as_form(s) for s in truths]
    exact = [(m, denom, np.asarray(acc, dtype=np.float64)) for m, denom, acc in given]  # the numbers given
    top = max(m for m, _, _ in exact)  # the merge of the given numbers, by its definition
    merged_truth = (top, math.fsum(denom * math.exp(m - top) for m, denom, _ in exact),
                    sum(acc * math.exp(m - top) for m, _, acc in exact))
    if form == "a generator of summaries":
        out = lab.merge_partials(s for s in given)
        assert_output_close(out, expected, what="merge_partials of a generator of 2 summaries")
        return
    assert_summary_close(lab.merge_two(*given), merged_truth, what=f"merge_two of summaries whose acc is {form}")
    out = np.asarray(lab.merge_partials(given))
    labkit.assert_value(out.dtype, np.dtype(np.float64), what=f"merge_partials of summaries whose acc is {form}: "
                        "the output's dtype")
    alone = np.asarray(lab.merge_partials(given[:1]))
    labkit.assert_value(alone.dtype, np.dtype(np.float64), what=f"merge_partials of one summary whose acc is "
                        f"{form}: the output's dtype (acc / denom in acc's own dtype?)")
    assert_output_close(alone, exact[0][2] / exact[0][1], what=f"merge_partials of one summary whose acc is {form}")
