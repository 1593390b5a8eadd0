# ruff: noqa: F821, F841, E731
"""Malformed programs and bad arguments get clear errors.

A malformed program raises `eqsat.ProgramError` (an `eqsat.EqsatError`) at decoration
time whose message starts with `file:line:col:` naming the file and the line of the
offending code, then says what is wrong. Bad arguments to `reference`, `Plan.run` and
`optimize` raise `eqsat.ArgumentError` naming the parameter or dimension. Never an
internal exception (KeyError, AttributeError, AssertionError, egglog errors, ...), and
never a silently wrong result.

Each offending line below ends with a marker comment `# ERR:<tag>`; the expected line
number is found by searching this file for that marker, so editing the file does not
break the tests. The programs are nested functions: `@program` reads their source with
`inspect` when the `def` statement runs, and their bodies are never executed by Python
(so names such as `M` need not exist).
"""
import importlib.util
import os
import re
import sys
import textwrap
import uuid
from pathlib import Path

import numpy as np
import pytest

import eqsat
from eqsat import empty, f32, maximum, program, relu, tanh, transpose, zeros

THIS_FILE = os.path.realpath(__file__)
BAD_DIR = Path(__file__).parent / "bad_programs"

# An error message: "<file>:<line>:<col>: <what is wrong>"
LOC_RE = re.compile(r"^(?P<file>.+?):(?P<line>\d+):(?P<col>\d+): (?P<msg>.+)$", re.S)


# ---------------------------------------------------------------------------- helpers
def marker_line(tag: str, path: str = THIS_FILE) -> int:
    """The 1-based line of `path` that ends with the comment `# ERR:<tag>` (exactly one)."""
    marker = f"# ERR:{tag}"
    lines = Path(path).read_text().splitlines()
    hits = [n for n, text in enumerate(lines, 1) if text.rstrip().endswith(marker)]
    assert len(hits) == 1, f"marker {marker!r} found {len(hits)} times in {path}"
    return hits[0]


def source_line(line: int, path: str = THIS_FILE) -> str:
    return Path(path).read_text().splitlines()[line - 1]


def check_program_error(err: BaseException, tag: str, *phrases: str, at: str | None = None,
                        path: str = THIS_FILE) -> None:
    """`err` is a ProgramError located at the `# ERR:<tag>` line of `path`, mentioning `phrases`.

    at: if given, a snippet of that line the column must point at (its first occurrence).
    """
    assert isinstance(err, eqsat.ProgramError), (
        f"expected eqsat.ProgramError, got {type(err).__module__}.{type(err).__name__}: {err}")
    assert isinstance(err, eqsat.EqsatError)
    text = str(err)
    m = LOC_RE.match(text)
    assert m, f"message does not start with file:line:col: {text!r}"
    want_line = marker_line(tag, path)
    assert os.path.realpath(m["file"]) == os.path.realpath(path), f"wrong file in {text!r}"
    assert int(m["line"]) == want_line, (
        f"wrong line in {text!r}: expected {want_line} ({source_line(want_line, path).strip()!r}), "
        f"got {m['line']}")
    line_text = source_line(want_line, path)
    col = int(m["col"])
    assert 1 <= col <= len(line_text), f"column {col} outside line {want_line} in {text!r}"
    if at is not None:
        want_col = line_text.index(at) + 1
        assert col == want_col, f"column {col} should point at {at!r} (column {want_col}) in {text!r}"
    msg = m["msg"].lower()
    for p in phrases:
        assert p.lower() in msg, f"{p!r} not in the message {text!r}"
    # the structured location agrees with the text
    assert err.loc is not None and err.loc.line == want_line and err.loc.col == col


def expect_program_error(build, tag: str, *phrases: str, at: str | None = None) -> None:
    """Run `build` (which decorates a nested program) and check the ProgramError it raises."""
    try:
        build()
    except eqsat.ProgramError as e:
        check_program_error(e, tag, *phrases, at=at)
    except Exception as e:  # noqa: BLE001 - an internal error escaping is the failure
        pytest.fail(f"expected eqsat.ProgramError, got {type(e).__module__}.{type(e).__name__}: {e}")
    else:
        pytest.fail(f"the program was accepted; expected a ProgramError at line {marker_line(tag)}")


def expect_argument_error(fn, *phrases: str) -> eqsat.ArgumentError:
    """Call `fn` and check it raises ArgumentError mentioning each of `phrases`."""
    try:
        fn()
    except eqsat.ArgumentError as e:
        for p in phrases:
            assert p in str(e), f"{p!r} not in the message {str(e)!r}"
        return e
    except Exception as e:  # noqa: BLE001
        pytest.fail(f"expected eqsat.ArgumentError, got {type(e).__module__}.{type(e).__name__}: {e}")
    else:
        pytest.fail("no error was raised; expected eqsat.ArgumentError")


def load_module(path: Path):
    """Import the file at `path` under a fresh module name."""
    name = f"eqsat_bad_input_{path.stem}_{uuid.uuid4().hex}"
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    try:
        spec.loader.exec_module(mod)
    finally:
        sys.modules.pop(name, None)
    return mod


# ---------------------------------------------------------------------------- well-formed programs used by the argument tests
@program
def matmul_prog(a: f32["M", "K"], b: f32["K", "N"]) -> f32["M", "N"]:
    y = empty((M, N))
    for i in range(M):
        for j in range(N):
            acc = 0.0
            for k in range(K):
                acc += a[i, k] * b[k, j]
            y[i, j] = acc
    return y


@program
def scale_prog(x: f32["M"], s: f32) -> f32["M"]:
    y = empty((M,))
    for i in range(M):
        y[i] = x[i] * s
    return y


@program
def fixed_prog(x: f32[4]) -> f32[4]:
    y = empty((4,))
    for i in range(4):
        y[i] = x[i] + 1.0
    return y


def mats(m=4, k=3, n=5):
    rng = np.random.default_rng(0)
    return rng.standard_normal((m, k)).astype(np.float32), rng.standard_normal((k, n)).astype(np.float32)


MM_SHAPES = {"M": 4, "K": 3, "N": 5}


def test_the_helpers_accept_a_good_program():
    """Sanity check of the fixtures: the good programs decorate, run and optimize."""
    a, b = mats()
    np.testing.assert_allclose(eqsat.reference(matmul_prog, a, b), a @ b, rtol=1e-5, atol=1e-5)
    plan = eqsat.optimize(matmul_prog, MM_SHAPES, rules=[])
    np.testing.assert_allclose(plan.run(a, b), a @ b, rtol=1e-5, atol=1e-5)


# ============================================================================ unsupported statements
def test_while_loop():
    def build():
        @program
        def p(x: f32["M"]) -> f32["M"]:
            y = empty((M,))
            for i in range(M):
                y[i] = x[i]
            while y[0] > 1.0:  # ERR:while
                y[0] = y[0] * 0.5
            return y

    expect_program_error(build, "while", "unsupported statement", "while", at="while")


def test_a_reshape_size_no_annotation_names_is_named():
    """A reshape to a size the function never declares says so, not that the reshape broke
    the rule of views (which it kept; a probe's `x.reshape(A, 2, B)` with no B)."""
    def build():
        @program
        def p(x: f32["A", "C"]):
            y = x.reshape(A, 2, B)  # ERR:reshape_size
            return y[:, 0]

    expect_program_error(build, "reshape_size", "'B' is no dimension", at="x.reshape")


def test_a_reshape_to_another_element_count_is_refused_at_those_sizes(tmp_path):
    """numpy raises for a reshape to another count of elements; the plan did not: at
    C = 8, B = 3, `x.reshape(A, 2, B)` of an (A, C) tensor read 18 of its 24 elements and
    returned a value (a probe's). The sizes must agree now, checked when they are known."""
    path = tmp_path / "reshape_count.py"
    path.write_text("from eqsat import *\n\n@program\ndef p(x: f32['A', 'C']) -> f32['A', 'B']:\n"
                    "    y = x.reshape(A, 2, B)\n    return y[:, -1] - y[:, -2]\n")
    spec = importlib.util.spec_from_file_location(f"reshape_count_{uuid.uuid4().hex}", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    x = np.arange(24, dtype=np.float32).reshape(3, 8)
    good = {"A": 3, "C": 8, "B": 4}
    np.testing.assert_array_equal(eqsat.optimize(mod.p, good).run(x), eqsat.reference(mod.p, x, shapes=good))
    with pytest.raises(eqsat.ArgumentError, match=r"reshape_count.py:5:.*cannot reshape"):
        eqsat.optimize(mod.p, {"A": 3, "C": 8, "B": 3})


def test_try_statement():
    def build():
        @program
        def p(x: f32["M"]) -> f32["M"]:
            y = empty((M,))
            try:  # ERR:try
                for i in range(M):
                    y[i] = x[i]
            except IndexError:
                pass
            return y

    expect_program_error(build, "try", "unsupported statement", "try", at="try")


@pytest.mark.parametrize("stmt", ["with", "del", "break", "expr", "import", "def"])
def test_other_unsupported_statements(stmt):
    def build_with():
        @program
        def p(x: f32["M"]) -> f32["M"]:
            with open("log") as f:  # ERR:with
                pass
            return x

    def build_del():
        @program
        def p(x: f32["M"]) -> f32["M"]:
            t = x + 1.0
            del t  # ERR:del
            return x

    def build_break():
        @program
        def p(x: f32["M"]) -> f32["M"]:
            y = empty((M,))
            for i in range(M):
                y[i] = x[i]
                break  # ERR:break
            return y

    def build_expr():
        @program
        def p(x: f32["M"]) -> f32["M"]:
            relu(x)  # ERR:expr
            return x

    def build_import():
        @program
        def p(x: f32["M"]) -> f32["M"]:
            import math  # ERR:import
            return x

    def build_def():
        @program
        def p(x: f32["M"]) -> f32["M"]:
            def helper(v):  # ERR:def
                return v
            return x

    expect_program_error(locals()[f"build_{stmt}"], stmt, "unsupported statement")


# ============================================================================ unsupported expressions
def test_comparison():
    def build():
        @program
        def p(x: f32["M"]) -> f32["M"]:
            y = empty((M,))
            for i in range(M):
                y[i] = x[i] < 0.0  # ERR:compare
            return y

    expect_program_error(build, "compare", "a comparison is a condition", at="x[i] <")


def test_lambda():
    def build():
        @program
        def p(x: f32["M"]) -> f32["M"]:
            f = lambda v: v * 2.0  # ERR:lambda
            return x

    expect_program_error(build, "lambda", "unsupported expression", "lambda", at="lambda")


def test_list_literal():
    def build():
        @program
        def p(x: f32["M"]) -> f32["M"]:
            y = empty((M,))
            for i in range(M):
                acc = [x[i], 1.0]  # ERR:list
                y[i] = x[i]
            return y

    expect_program_error(build, "list", "unsupported expression", "list", at="[x[i], 1.0]")


def test_unsupported_attribute():
    def build():
        @program
        def p(x: f32["M"]) -> f32["M"]:
            n = x.dtype  # ERR:attr
            return x

    expect_program_error(build, "attr", "unsupported attribute", ".dtype")


def test_a_tuple_as_a_value():
    """`x.shape` is the tuple of x's extents (`eqsat/desugar.py`), a value only unpacked."""
    def build():
        @program
        def p(x: f32["M", "N"]) -> f32["M", "N"]:
            n = x.shape  # ERR:shape-tuple
            return x

    expect_program_error(build, "shape-tuple", "tuple", "unpack")


def test_unsupported_function():
    def build():
        @program
        def p(x: f32["M"]) -> f32["M"]:
            y = empty((M,))
            for i in range(M):
                y[i] = np.cbrt(x[i])  # ERR:np-call
            return y

    # (np.abs, np.exp, ... are the language's functions: eqsat/desugar.py)
    expect_program_error(build, "np-call", "unsupported function", "np.cbrt", at="np.cbrt")


def test_an_unsupported_function_with_keywords_is_named():
    """A probe's: `np.argmin(x, axis=1)` said "keyword arguments are not supported"."""
    def build():
        @program
        def p(x: f32["M", "N"]) -> f32["M"]:
            return np.argmin(x, axis=1)  # ERR:argmin-kw

    expect_program_error(build, "argmin-kw", "unsupported function", "np.argmin")


def test_a_reduction_of_an_unknown_shape_says_so():
    def build():
        @program
        def p(x: f32["M", "N"]) -> f32["M"]:
            return np.max(np.argmin(x), axis=1)  # ERR:max-kw

    expect_program_error(build, "max-kw", "its operand's shape is not known here; a reduction reads")


def test_string_constant_in_expression():
    def build():
        @program
        def p(x: f32["M"]) -> f32["M"]:
            y = empty((M,))
            for i in range(M):
                y[i] = x[i] + "1"  # ERR:strconst
            return y

    expect_program_error(build, "strconst", "unsupported constant", at='"1"')


def test_indexing_an_expression():
    def build():
        @program
        def p(x: f32["M", "N"]) -> f32["M", "N"]:
            y = empty((M, N))
            for i in range(M):
                for j in range(N):
                    y[i, j] = (x[i, j] * 2.0)[0]  # ERR:call-index
            return y

    # (an element of a tensor expression, `relu(x)[i, j]`, is read: tests/test_python_forms.py;
    # a number is not indexed)
    expect_program_error(build, "call-index", "only named tensors can be indexed")


def test_a_closure_variable_is_named_as_one():
    def build():
        scale = 2.0

        @program
        def p(x: f32["M"]) -> f32["M"]:
            y = empty((M,))
            for i in range(M):
                y[i] = x[i] * scale  # ERR:closure
            return y

    expect_program_error(build, "closure", "undefined name 'scale'", "enclosing function", "parameter", at="scale")


def test_a_size_no_parameter_names_says_where_sizes_come_from():
    def build():
        @program
        def p(x: f32["M"]) -> f32["M"]:
            y = empty((M,))
            for i in range(N):  # ERR:no-dim
                y[i] = x[i]
            return y

    expect_program_error(build, "no-dim", "undefined name 'N'", "dimension", "`int` parameter", at="N)")


# ============================================================================ names
def test_undefined_name():
    def build():
        @program
        def p(x: f32["M"]) -> f32["M"]:
            y = empty((M,))
            for i in range(M):
                y[i] = x[i] + undefined_thing  # ERR:undefined
            return y

    expect_program_error(build, "undefined", "undefined name", "undefined_thing", at="undefined_thing")



BAD_INT_CONSTANT = np.int64(3)  # module-level names of other kinds than the language's constants
BAD_TABLE_CONSTANT = np.ones(3)


def test_a_module_level_numpy_integer_says_what_it_is():
    def build():
        @program
        def p(x: f32["M"]) -> f32["M"]:
            return x * BAD_INT_CONSTANT  # ERR:int-constant

    expect_program_error(build, "int-constant", "module-level name 'BAD_INT_CONSTANT' is a numpy.int64",
                         "numpy floating scalar", at="BAD_INT_CONSTANT")


def test_a_module_level_array_says_to_pass_it_as_a_parameter():
    def build():
        @program
        def p(x: f32["M"]) -> f32["M"]:
            return x * BAD_TABLE_CONSTANT[0]  # ERR:table-constant

    expect_program_error(build, "table-constant", "module-level name 'BAD_TABLE_CONSTANT' is a numpy.ndarray",
                         "as a parameter", at="BAD_TABLE_CONSTANT")

def test_loop_variable_read_after_its_loop():
    """Read after its loop and bound again later in the block: refused (read alone, it is its
    last value: tests/test_python_forms.py)."""
    def build():
        @program
        def p(x: f32["M"]) -> f32["M"]:
            y = empty((M,))
            for i in range(M):
                y[i] = x[i]
            y[0] = x[i]  # ERR:after-loop
            for i in range(M):
                y[i] += 1.0
            return y

    expect_program_error(build, "after-loop", "'i'", "after its loop", at="i]")


def test_undefined_name_in_loop_bound():
    def build():
        @program
        def p(x: f32["M"]) -> f32["M"]:
            y = empty((M,))
            for i in range(Q):  # ERR:undefined-bound
                y[i] = x[i]
            return y

    expect_program_error(build, "undefined-bound", "undefined name", "'Q'", at="Q")


def test_undefined_name_used_before_assignment():
    def build():
        @program
        def p(x: f32["M"]) -> f32["M"]:
            y = empty((M,))
            for i in range(M):
                y[i] = x[i] * later  # ERR:before-assign
            later = 2.0
            return y

    expect_program_error(build, "before-assign", "undefined name", "later")


def test_augmented_assign_before_assignment():
    def build():
        @program
        def p(x: f32["M"]) -> f32["M"]:
            y = empty((M,))
            for i in range(M):
                acc += x[i]  # ERR:aug-before
                y[i] = acc
            return y

    expect_program_error(build, "aug-before", "acc", "before it is assigned")


def test_undefined_buffer_store():
    def build():
        @program
        def p(x: f32["M"]) -> f32["M"]:
            for i in range(M):
                out[i] = x[i]  # ERR:undefined-store
            return x

    expect_program_error(build, "undefined-store", "undefined name", "out")


def test_function_used_as_value():
    def build():
        @program
        def p(x: f32["M"]) -> f32["M"]:
            f = relu  # ERR:fn-value
            return x

    expect_program_error(build, "fn-value", "relu", "function")


def test_shadowing_a_library_function():
    def build():
        @program
        def p(x: f32["M"]) -> f32["M"]:
            relu = x + 1.0  # ERR:shadow-fn
            return x

    expect_program_error(build, "shadow-fn", "relu", "shadows")


# ============================================================================ indices
def test_index_product_of_loop_variables():
    def build():
        @program
        def p(a: f32["M"]) -> f32["M"]:
            y = empty((M,))
            for i in range(M):
                for j in range(M):
                    y[i] = a[i * j]  # ERR:i-times-j
            return y

    expect_program_error(build, "i-times-j", "not affine", "product", at="i * j")


def test_non_affine_index_in_store():
    def build():
        @program
        def p(a: f32["M"]) -> f32["M"]:
            y = zeros((M,))
            for i in range(M):
                for j in range(M):
                    y[i * j] += a[i]  # ERR:store-i-times-j
            return y

    expect_program_error(build, "store-i-times-j", "not affine", at="i * j")


def test_index_float_constant():
    def build():
        @program
        def p(a: f32["M"]) -> f32["M"]:
            y = empty((M,))
            for i in range(M):
                y[i] = a[i * 0.5]  # ERR:float-index
            return y

    expect_program_error(build, "float-index", "unsupported index expression")


def test_index_by_a_tensor_element():
    def build():
        @program
        def p(a: f32["M"], b: f32["M"]) -> f32["M"]:
            y = empty((M,))
            for i in range(M):
                y[i] = a[b[i]]  # ERR:tensor-index
            return y

    expect_program_error(build, "tensor-index", "unsupported index expression", at="b[i]")


def test_index_by_scalar_local():
    def build():
        @program
        def p(a: f32["M"]) -> f32["M"]:
            y = empty((M,))
            s = 0.0
            for i in range(M):
                y[i] = a[s]  # ERR:scalar-index
            return y

    expect_program_error(build, "scalar-index", "'s'", "neither a loop variable nor a dimension",
                         "write its expression in the index itself")


def test_slicing():
    def build():
        @program
        def p(a: f32["M", "N"]) -> f32["M"]:
            y = empty((M,))
            for i in range(N):
                y += a[:, ::-3]  # ERR:slice
            return y

    expect_program_error(build, "slice", "slice", "step", "a[:, ::-3]", at="a[:, ::-3]")


def test_too_many_indices():
    def build():
        @program
        def p(a: f32["M"]) -> f32["M"]:
            y = empty((M,))
            for i in range(M):
                y[i] = a[i, 0]  # ERR:rank-read
            return y

    expect_program_error(build, "rank-read", "'a'", "rank 1", "2 indices", at="a[i, 0]")


def test_too_many_indices_in_store():
    def build():
        @program
        def p(a: f32["M"]) -> f32["M"]:
            y = empty((M,))
            for i in range(M):
                y[i, i] = a[i]  # ERR:rank-store
            return y

    expect_program_error(build, "rank-store", "'y'", "rank 1", "2 indices", at="y[i, i]")


def test_indexing_a_scalar():
    def build():
        @program
        def p(x: f32["M"], s: f32) -> f32["M"]:
            y = empty((M,))
            for i in range(M):
                y[i] = s[i]  # ERR:index-scalar
            return y

    expect_program_error(build, "index-scalar", "'s'", "scalar", at="s[i]")


# ============================================================================ shapes
def test_store_shape_mismatch():
    def build():
        @program
        def p(x: f32["M", "N"], v: f32["K"]) -> f32["M", "N"]:
            y = empty((M, N))
            for i in range(M):
                y[i] = v  # ERR:store-shape
            return y

    expect_program_error(build, "store-shape", "shape mismatch", "[K]", "[N]", at="v  #")


def test_store_tensor_into_element():
    def build():
        @program
        def p(x: f32["M", "N"]) -> f32["M", "N"]:
            y = empty((M, N))
            for i in range(M):
                for j in range(N):
                    y[i, j] = x[i]  # ERR:store-elem
            return y

    expect_program_error(build, "store-elem", "shape mismatch", "[N]", "element", at="x[i]")


def test_matmul_contraction_mismatch():
    def build():
        @program
        def p(a: f32["M", "K"], b: f32["N", "K"]) -> f32["M", "N"]:
            y = a @ b  # ERR:mm-contract
            return y

    expect_program_error(build, "mm-contract", "shape mismatch", "@", "K", "N", at="a @ b")


def test_matmul_of_a_scalar():
    def build():
        @program
        def p(a: f32["M", "K"], s: f32) -> f32["M", "K"]:
            y = a @ s  # ERR:mm-scalar
            return y

    expect_program_error(build, "mm-scalar", "`@`", "scalar", at="a @ s")


def test_matmul_with_batch_axes_that_differ():
    def build():
        @program
        def p(a: f32["B", "C", "M", "K"], w: f32["C", "K", "N"]) -> f32["B", "C", "M", "N"]:
            y = a @ w  # ERR:mm-batch-rank
            return y

    expect_program_error(build, "mm-batch-rank", "`@`", "batch axes differ", at="a @ w")


def test_matmul_of_a_vector_of_the_wrong_length():
    def build():
        @program
        def p(a: f32["M", "K"], v: f32["M"]) -> f32["M"]:
            y = a @ v  # ERR:mm-vector
            return y

    expect_program_error(build, "mm-vector", "shape mismatch in `@`", "contraction K vs M", at="a @ v")


def test_batched_matmul_batch_mismatch():
    def build():
        @program
        def p(a: f32["B", "M", "K"], b: f32["C", "K", "N"]) -> f32["B", "M", "N"]:
            y = a @ b  # ERR:mm-batch
            return y

    expect_program_error(build, "mm-batch", "batch", "B", "C", at="a @ b")


def test_broadcasting_mismatch():
    def build():
        @program
        def p(a: f32["M", "K"], bias: f32["N"]) -> f32["M", "K"]:
            y = a + bias  # ERR:bcast
            return y

    expect_program_error(build, "bcast", "shape mismatch", "broadcast", "[M, K]", "[N]", at="a + bias")


def test_broadcasting_mismatch_in_maximum():
    def build():
        @program
        def p(a: f32["M", "K"], b: f32["K", "M"]) -> f32["M", "K"]:
            y = maximum(a, b)  # ERR:bcast-max
            return y

    expect_program_error(build, "bcast-max", "broadcast", at="maximum")


def test_augmented_assign_shape_mismatch():
    def build():
        @program
        def p(x: f32["M"]) -> f32["M"]:
            acc = 0.0
            acc += x  # ERR:aug-shape
            return x

    expect_program_error(build, "aug-shape", "shape mismatch", "acc")


def test_builtin_max_on_tensors():
    def build():
        @program
        def p(a: f32["M"], b: f32["M"]) -> f32["M"]:
            y = max(a, b)  # ERR:max-tensor
            return y

    expect_program_error(build, "max-tensor", "max", "scalars", "maximum")


def test_transpose_bad_permutation():
    def build():
        @program
        def p(a: f32["M", "N"]) -> f32["N", "M"]:
            y = transpose(a, (0, 0))  # ERR:perm
            return y

    expect_program_error(build, "perm", "permutation")


def test_transpose_of_a_scalar():
    def build():
        @program
        def p(a: f32["M", "N"], s: f32) -> f32["N", "M"]:
            t = s.T  # ERR:scalar-T
            return a

    expect_program_error(build, "scalar-T", ".T", "scalar")


def test_unary_function_arity():
    def build():
        @program
        def p(a: f32["M"], b: f32["M"]) -> f32["M"]:
            y = relu(a, b)  # ERR:arity
            return y

    expect_program_error(build, "arity", "relu", "one argument", at="relu")


def test_variable_changes_between_scalar_and_tensor():
    def build():
        @program
        def p(x: f32["M"]) -> f32["M"]:
            t = 0.0
            for i in range(2):  # (at the top a rebinding is a new name: desugar)
                t = x + 1.0  # ERR:scalar-to-tensor
            return t

    expect_program_error(build, "scalar-to-tensor", "'t'", "scalar and tensor")


# ============================================================================ writes, assignments
def test_assigning_to_a_dimension_name():
    def build():
        @program
        def p(x: f32["M"]) -> f32["M"]:
            M = 3  # ERR:assign-dim
            return x

    expect_program_error(build, "assign-dim", "cannot assign", "dimension", "'M'", at="M =")


def test_assigning_to_a_loop_variable():
    def build():
        @program
        def p(x: f32["M"]) -> f32["M"]:
            y = empty((M,))
            for i in range(M):
                i = 0  # ERR:assign-loopvar
                y[i] = x[i]
            return y

    expect_program_error(build, "assign-loopvar", "cannot assign", "loop variable", "'i'")


def test_reserved_names():
    """eqsat's own rewrites bind `eqsat_` names (`a, b = b, a + b`, ping-pong loops);
    the user's program may not."""
    def build():
        @program
        def p(x: f32["M"]) -> f32["M"]:
            for i in range(M):
                eqsat_unpack0 = x[i]  # ERR:reserved
            return x

    expect_program_error(build, "reserved", "reserved for eqsat")


def test_an_assertion_on_values():
    def build():
        @program
        def p(x: f32["M"]) -> f32["M"]:
            assert x[0] > 0.0  # ERR:assert-data
            return x

    expect_program_error(build, "assert-data", "sizes only")


def test_an_assertion_inside_a_loop_on_data():
    """Inside a loop an assert may read loop variables too (checked at every iteration:
    `test_an_assertion_inside_loops_holds_at_every_iteration`), never data."""
    def build():
        @program
        def p(x: f32["M"]) -> f32["M"]:
            for i in range(M):
                assert x[i] > 0.0  # ERR:assert-loop
            return x

    expect_program_error(build, "assert-loop", "sizes only", "loop variables")


def test_a_loop_bound_that_is_not_affine():
    def build():
        @program
        def p(x: f32["M"]) -> f32["M"]:
            y = empty((M,))
            for i in range(M):
                for j in range(abs(M - 2 * i)):  # ERR:bound
                    y[i] = x[j]
            return y

    expect_program_error(build, "bound", "unsupported loop bound", "bounds must be affine")


def test_unpacking_a_starred_target():
    def build():
        @program
        def p(x: f32["M"]) -> f32["M"]:
            a, *b = 1.0, 2.0, 3.0  # ERR:unpack
            return x

    expect_program_error(build, "unpack", "without `*`")


def test_unpacking_counts_differ():
    def build():
        @program
        def p(x: f32["M"]) -> f32["M"]:
            a, b = 1.0, 2.0, 3.0  # ERR:unpack-n
            return x

    expect_program_error(build, "unpack-n", "2 targets but 3 values")


def test_unpacking_a_value_that_is_not_written_out():
    def build():
        @program
        def p(x: f32["M"]) -> f32["M"]:
            a, b = x  # ERR:unpack-x
            return x

    expect_program_error(build, "unpack-x", "tuple of values written out")


def test_bad_annotation_numpy_type():
    def build():
        @program
        def p(x: np.ndarray) -> f32["M"]:  # ERR:np-ann
            return x

    expect_program_error(build, "np-ann", "parameter 'x'", "annotation", at="x: np")


def test_bad_annotation_dimension_value():
    """`f32["M", 1.5]` is evaluated by Python when the `def` runs, before `@program` sees
    the function; the error must still be an eqsat ProgramError at that line, not a bare
    TypeError raised from inside eqsat/lang.py."""

    def build():
        @program
        def p(x: f32["M", 1.5]) -> f32["M"]:  # ERR:float-dim
            return x

    expect_program_error(build, "float-dim", "1.5")


def test_parameter_with_default():
    def build():
        @program
        def p(x: f32["M"], s: f32 = 1.0) -> f32["M"]:  # ERR:default
            return x

    expect_program_error(build, "default", "default")


def test_varargs_parameter():
    def build():
        @program
        def p(x: f32["M"], *rest) -> f32["M"]:  # ERR:varargs
            return x

    expect_program_error(build, "varargs", "positional")


def test_parameter_named_like_a_dimension():
    def build():
        @program
        def p(x: f32["M"], M: f32) -> f32["M"]:  # ERR:param-dim-clash
            return x

    expect_program_error(build, "param-dim-clash", "'M'", "clashes", at="M: f32")


def test_return_annotation_disagrees_with_returned_shape():
    """The return annotation is part of the program's signature (DESIGN.md writes
    `-> f32["M", "N"]`); returning an [M, K] tensor under `-> f32["M", "N"]` is a
    malformed program and must not be accepted silently."""

    def build():
        @program
        def p(x: f32["M", "K"], w: f32["K", "N"]) -> f32["M", "N"]:
            y = x + 1.0
            return y  # ERR:ret-ann

    expect_program_error(build, "ret-ann", "[M, N]", "[M, K]")


def test_return_annotation_with_a_digit_string_dimension():
    """`-> f32["2"]` once said "returns [2] but the annotation declares [2]". A return
    annotation's dim may be an integer expression of sizes (`"H - K + 1"`), so "2" is 2; a
    text that is no such expression is refused, naming it."""

    @program
    def p(x: f32["M"]) -> f32["2"]:
        out = zeros((2,))
        out[0] = x[0]
        return out

    x = np.arange(3, dtype=np.float32)
    assert np.array_equal(eqsat.optimize(p, {"M": 3}).run(x), [0.0, 0.0])

    def build():
        @program
        def q(x: f32["M"]) -> f32["M +"]:  # ERR:ret-str-dim
            return x * 1.0

    expect_program_error(build, "ret-str-dim", "'M +'", "integer expressions of sizes")


# ============================================================================ buffers
def test_buffer_allocator_with_keyword():
    def build():
        @program
        def p(x: f32["M"]) -> f32["M"]:
            y = zeros((M,), order="F")  # ERR:zeros-kw
            return y

    expect_program_error(build, "zeros-kw", "keyword")


def test_numpy_buffer_of_another_dtype():
    def build():
        @program
        def p(x: f32["M"]) -> f32["M"]:
            y = np.zeros((M,), dtype=np.float64)  # ERR:np-f64
            return y

    expect_program_error(build, "np-f64", "dtype=np.float32", "f32")


def test_buffer_allocator_used_in_an_expression():
    def build():
        @program
        def p(x: f32["M"]) -> f32["M"]:
            y = x + zeros((M,))  # ERR:zeros-expr
            return y

    expect_program_error(build, "zeros-expr", "zeros", "assigned directly", at="zeros(")


def test_storing_into_a_scalar_local():
    def build():
        @program
        def p(x: f32["M"]) -> f32["M"]:
            acc = 0.0
            for i in range(M):
                acc[i] = x[i]  # ERR:store-scalar
            return x

    expect_program_error(build, "store-scalar", "'acc'", "not a tensor buffer")


# ============================================================================ return
def test_return_missing():
    def build():
        @program
        def p(x: f32["M"]) -> f32["M"]:  # ERR:no-return
            y = empty((M,))
            for i in range(M):
                y[i] = x[i]

    expect_program_error(build, "no-return", "must end with `return", at="def p")


def test_return_not_last():
    def build():
        @program
        def p(x: f32["M"]) -> f32["M"]:
            y = empty((M,))
            return y  # ERR:early-return
            for i in range(M):
                y[i] = x[i]
            return y

    expect_program_error(build, "early-return", "`return` must be the last statement", at="return")


def test_return_inside_loop():
    def build():
        @program
        def p(x: f32["M"]) -> f32["M"]:
            y = empty((M,))
            for i in range(M):
                y[i] = x[i]
                return y  # ERR:loop-return
            return y

    expect_program_error(build, "loop-return", "`return`", "outside loops", at="return")


def test_return_without_value():
    def build():
        @program
        def p(x: f32["M"]) -> f32["M"]:
            y = empty((M,))
            return  # ERR:bare-return

    expect_program_error(build, "bare-return", "`return` needs a value", at="return")


def test_return_of_a_dimension():
    def build():
        @program
        def p(x: f32["M"]) -> f32["M"]:
            return M  # ERR:return-dim

    expect_program_error(build, "return-dim", "returns a scalar", "[M]")


# ============================================================================ loops
def test_for_else():
    def build():
        @program
        def p(x: f32["M"]) -> f32["M"]:
            y = empty((M,))
            for i in range(M):  # ERR:for-else
                y[i] = x[i]
            else:
                pass
            return y

    expect_program_error(build, "for-else", "for ... else", at="for")


def test_loop_over_a_tensor_expression():
    """(over a tensor's name, `for v in x`, it steps through its rows: tests/test_sections.py)"""
    def build():
        @program
        def p(x: f32["M"]) -> f32["M"]:
            acc = 0.0
            for v in x * 2.0:  # ERR:iter-tensor
                acc += v
            return x

    expect_program_error(build, "iter-tensor", "range(n)", at="x * 2.0:")


def test_loop_over_enumerate():
    def build():
        @program
        def p(x: f32["M"]) -> f32["M"]:
            y = zeros((M,))
            for i in enumerate(range(M)):  # ERR:iter-enumerate
                y[0] += 1.0
            return y

    expect_program_error(build, "iter-enumerate", "range(n)", at="enumerate")


def test_loop_target_not_a_name():
    def build():
        @program
        def p(x: f32["M"]) -> f32["M"]:
            y = zeros((M,))
            for i, j in range(M):  # ERR:loop-tuple
                y[0] += 1.0
            return y

    expect_program_error(build, "loop-tuple", "loop variable", "plain name", at="i, j")


def test_loop_bound_not_a_dimension():
    def build():
        @program
        def p(x: f32["M"], n: f32) -> f32["M"]:
            y = zeros((M,))
            for i in range(n):  # ERR:scalar-bound
                y[i] = x[i]
            return y

    expect_program_error(build, "scalar-bound", "'n'", "nor a dimension", at="n)")


def test_loop_variable_shadows():
    def build():
        @program
        def p(x: f32["M"]) -> f32["M"]:
            y = zeros((M,))
            for i in range(M):
                for i in range(M):  # ERR:shadow-loop
                    y[i] += x[i]
            return y

    expect_program_error(build, "shadow-loop", "'i'", "shadows")


def test_loop_variable_named_like_a_dimension():
    def build():
        @program
        def p(x: f32["M"]) -> f32["M"]:
            y = zeros((M,))
            for M in range(3):  # ERR:loopvar-dim
                y[0] += 1.0
            return y

    expect_program_error(build, "loopvar-dim", "'M'", "shadows")


def test_range_outside_a_loop():
    def build():
        @program
        def p(x: f32["M"]) -> f32["M"]:
            r = range(M)  # ERR:range-value
            return x

    expect_program_error(build, "range-value", "range", "loop", at="range(")


# ============================================================================ calls
def test_keyword_argument_in_call():
    def build():
        @program
        def p(a: f32["M", "N"]) -> f32["N", "M"]:
            y = transpose(a, perm=(1, 0))  # ERR:kwarg
            return y

    expect_program_error(build, "kwarg", "keyword", at="transpose(")


def test_keyword_argument_in_elementwise_call():
    def build():
        @program
        def p(a: f32["M"]) -> f32["M"]:
            y = empty((M,))
            for i in range(M):
                y[i] = relu(x=a[i])  # ERR:kwarg-relu
            return y

    expect_program_error(build, "kwarg-relu", "keyword", at="relu(")


def test_keyword_argument_in_range():
    def build():
        @program
        def p(a: f32["M"]) -> f32["M"]:
            y = empty((M,))
            for i in range(stop=M):  # ERR:kwarg-range
                y[i] = a[i]
            return y

    expect_program_error(build, "kwarg-range", "range", at="range(")


# ============================================================================ what @program is applied to
def test_program_on_a_class():
    class NotAFunction:
        pass

    with pytest.raises(eqsat.ProgramError) as ei:
        program(NotAFunction)
    assert "function" in str(ei.value)


def test_program_on_a_non_function():
    with pytest.raises(eqsat.ProgramError) as ei:
        program(42)
    assert "42" in str(ei.value)


def test_program_without_source():
    ns = {}
    exec("def q(x: f32['M']) -> f32['M']:\n    return x\n", {"f32": f32}, ns)
    with pytest.raises(eqsat.ProgramError) as ei:
        program(ns["q"])
    assert "source" in str(ei.value)


def test_program_on_a_lambda():
    with pytest.raises(eqsat.ProgramError) as ei:
        program(lambda x: x)  # ERR:lambda-prog
    check_program_error(ei.value, "lambda-prog", "function definition")


# ============================================================================ programs in other files
def test_error_names_the_module_file(tmp_path):
    """A program in another module: the error names that file and its line."""
    path = BAD_DIR / "while_loop.py"
    with pytest.raises(eqsat.ProgramError) as ei:
        load_module(path)
    check_program_error(ei.value, "module-while", "unsupported statement", path=str(path))


def test_error_names_a_temporary_file(tmp_path):
    src = textwrap.dedent('''\
        from eqsat import program, f32, empty


        @program
        def p(x: f32["M"]) -> f32["M"]:
            y = empty((M,))
            for i in range(M):
                y[i] = x[i] ** x  # ERR:tmp-pow
            return y
        ''')
    path = tmp_path / "user_prog.py"
    path.write_text(src)
    with pytest.raises(eqsat.ProgramError) as ei:
        load_module(path)
    check_program_error(ei.value, "tmp-pow", "takes a number as its exponent", path=str(path))


def test_valid_program_with_postponed_annotations():
    """Not bad input, but the same check: with `from __future__ import annotations` a
    correct program must not be rejected as 'needs an annotation'."""
    mod = load_module(BAD_DIR / "future_annotations.py")
    x = np.arange(4, dtype=np.float32)
    np.testing.assert_allclose(eqsat.reference(mod.double, x), 2 * x)


def test_valid_program_with_a_docstring_at_column_0():
    """Not bad input: a nested program whose docstring has a line at column 0 must parse
    (the front end dedents the source; an IndentationError must not escape)."""

    def build():
        @program
        def p(x: f32["M"]) -> f32["M"]:
            """Doubles x.
Written at column 0 on purpose.
            """
            y = empty((M,))
            for i in range(M):
                y[i] = x[i] * 2.0
            return y
        return p

    p = build()
    x = np.arange(3, dtype=np.float32)
    np.testing.assert_allclose(eqsat.reference(p, x), 2 * x)


# ============================================================================ bad arguments: reference / run
def test_wrong_number_of_arguments():
    a, b = mats()
    expect_argument_error(lambda: eqsat.reference(matmul_prog, a), "2 arguments", "a, b", "got 1")
    expect_argument_error(lambda: eqsat.reference(matmul_prog, a, b, b), "2 arguments", "got 3")


def test_arguments_by_name_bind_as_in_python():
    """`plan.run(a=..., b=...)` and `reference(prog, a, b=...)` bind as a call of the
    function does (it was Python's TypeError from `run`, a probe's, session 27); a name
    that is no parameter, one given twice, or one missing is an ArgumentError."""
    a, b = mats()
    plan = eqsat.optimize(matmul_prog, {"M": a.shape[0], "K": a.shape[1], "N": b.shape[1]})
    got = plan.run(a, b)
    np.testing.assert_allclose(got, eqsat.reference(matmul_prog, a, b), rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(plan.run(b=b, a=a), got)
    np.testing.assert_array_equal(plan.run(a, b=b), got)
    np.testing.assert_array_equal(eqsat.reference(matmul_prog, b=b, a=a), eqsat.reference(matmul_prog, a, b))
    expect_argument_error(lambda: plan.run(a, c=b), "no parameter 'c'", "a, b")
    expect_argument_error(lambda: plan.run(a, a=a), "two values", "'a'")
    expect_argument_error(lambda: plan.run(b=b), "missing 1 argument", "a")


def test_parameters_named_as_the_calls_own_keywords(tmp_path):
    """A parameter named `prog` or `args` passes to reference by name (it was Python's
    TypeError); one named `backend` (run's keyword) or `shapes` (reference's) is said to
    pass by position (a probe's)."""
    path = tmp_path / f"kwc_{uuid.uuid4().hex}.py"
    path.write_text("from eqsat import *\n\n@program\ndef r(prog: f32['M'], args: f32['M'], backend: f32['M'], "
                    "shapes: f32['M']) -> f32['M']:\n    return prog + args * backend - shapes\n")
    mod = _import_file(path, path.stem)
    y = np.arange(3, dtype=np.float32)
    want = y + y * y - y
    np.testing.assert_array_equal(eqsat.reference(mod.r, y, y, y, y), want)
    np.testing.assert_array_equal(eqsat.reference(mod.r, y, y, y, y, shapes=None), want)
    plan = eqsat.optimize(mod.r, {"M": 3})
    np.testing.assert_array_equal(plan.run(y, y, y, y), want)
    np.testing.assert_array_equal(plan.run(y, y, y, shapes=y), want)  # (`shapes` is no keyword of run)
    expect_argument_error(lambda: plan.run(y, y, backend=y, shapes=y), "own keyword", "by position")
    expect_argument_error(lambda: eqsat.reference(mod.r, prog=y, args=y, backend=y), "missing", "shapes",
                          "by position")


def test_a_zero_dimensional_array_is_a_scalar_argument(tmp_path):
    """A 0-d array passes for a float scalar parameter; an integer one did not for an `int`
    parameter ("is an int, got array(2)", a probe's); None is named as such."""
    path = tmp_path / f"zd_{uuid.uuid4().hex}.py"
    path.write_text("from eqsat import *\n\n@program\ndef p(x: f32['M'], n: int, s: f32) -> f32['M']:\n"
                    "    out = zeros((M,))\n    for i in range(n):\n        out[i] = x[i] * s\n    return out\n")
    mod = _import_file(path, path.stem)
    x = np.arange(4, dtype=np.float32)
    plan = eqsat.optimize(mod.p, {"M": 4, "n": 2})
    np.testing.assert_array_equal(plan.run(x, np.array(2), np.array(3.0)), [0.0, 3.0, 0.0, 0.0])
    expect_argument_error(lambda: plan.run(x, 2, None), "'s'", "got None")


def test_wrong_rank():
    a, b = mats()
    expect_argument_error(lambda: eqsat.reference(matmul_prog, a[0], b), "'a'", "rank 2", "(3,)")
    expect_argument_error(lambda: eqsat.reference(matmul_prog, a, b[None]), "'b'", "rank 2")


def test_inconsistent_dimension_sizes():
    a, _ = mats(4, 3, 5)
    b = np.ones((4, 5), np.float32)  # K is 3 in a, 4 in b
    expect_argument_error(lambda: eqsat.reference(matmul_prog, a, b), "'K'", "'b'", "3", "4")


def test_fixed_size_axis_mismatch():
    expect_argument_error(lambda: eqsat.reference(fixed_prog, np.ones(5, np.float32)), "'x'", "4", "5")


def test_shapes_disagree_with_arguments():
    a, b = mats()
    expect_argument_error(lambda: eqsat.reference(matmul_prog, a, b, shapes={"M": 7}), "'M'", "7", "4")


@pytest.mark.parametrize("bad", [
    np.array([["a", "b", "c"]] * 4),
    np.array([[None] * 3] * 4),
    np.array([[object()] * 3] * 4),
], ids=["str", "None", "object"])
def test_non_numeric_array(bad):
    _, b = mats()
    expect_argument_error(lambda: eqsat.reference(matmul_prog, bad, b), "'a'", "numeric")


def test_complex_array_is_rejected_not_truncated():
    """Casting complex to float32 drops the imaginary part: a silently wrong result."""
    a, b = mats()
    expect_argument_error(lambda: eqsat.reference(matmul_prog, a + 1j, b), "'a'")


def test_ragged_nested_list():
    _, b = mats()
    ragged = [[1.0, 2.0, 3.0], [1.0]]
    expect_argument_error(lambda: eqsat.reference(matmul_prog, ragged, b), "'a'")


@pytest.mark.parametrize("bad", [np.ones(4, np.float32), np.ones(1, np.float32), "2.0", None, 1 + 2j],
                         ids=["array", "length-1", "str", "None", "complex"])
def test_scalar_parameter_given_a_non_scalar(bad):
    x = np.ones(4, np.float32)
    expect_argument_error(lambda: eqsat.reference(scale_prog, x, bad), "'s'", "scalar")


@pytest.mark.parametrize("bad", [np.array("abc"), np.complex64(1 + 2j)], ids=["0d-str", "np-complex"])
def test_scalar_parameter_given_a_bad_0d_value(bad):
    x = np.ones(4, np.float32)
    expect_argument_error(lambda: eqsat.reference(scale_prog, x, bad), "'s'")


def test_reference_on_an_undecorated_function():
    def plain(a):
        return a

    expect_argument_error(lambda: eqsat.reference(plain, np.ones(3)), "@eqsat.program")


def test_run_with_sizes_different_from_optimized():
    plan = eqsat.optimize(matmul_prog, MM_SHAPES, rules=[])
    a, b = mats(6, 3, 5)
    expect_argument_error(lambda: plan.run(a, b), "M=4", "M=6")


def test_run_with_bad_arguments():
    plan = eqsat.optimize(matmul_prog, MM_SHAPES, rules=[])
    a, b = mats()
    expect_argument_error(lambda: plan.run(a), "2 arguments")
    expect_argument_error(lambda: plan.run(a[0], b), "'a'", "rank")
    expect_argument_error(lambda: plan.run(a, np.ones((4, 5), np.float32)), "'K'")
    expect_argument_error(lambda: plan.run(a, b, backend="cuda"), "backend", "'cuda'")


# ============================================================================ bad arguments: optimize
def test_optimize_missing_dimension():
    expect_argument_error(lambda: eqsat.optimize(matmul_prog, {"M": 4, "N": 5}), "K")


@pytest.mark.parametrize("value", [-4, 4.0, "4", True, None], ids=["negative", "float", "str", "bool", "None"])
def test_optimize_bad_dimension_value(value):
    shapes = dict(MM_SHAPES, M=value)
    expect_argument_error(lambda: eqsat.optimize(matmul_prog, shapes), "'M'")


def test_optimize_shapes_not_a_dict():
    expect_argument_error(lambda: eqsat.optimize(matmul_prog, None), "shapes")


def test_optimize_shapes_with_entries_naming_no_dimension():
    """A shapes dict may name other programs' sizes (one dict for several programs), but
    its keys must be names and its values ints (a probe's `{3: "x", "m": 2.5}` passed)."""
    assert eqsat.optimize(matmul_prog, {**MM_SHAPES, "Q": 3, "shift": -1}).kernels
    expect_argument_error(lambda: eqsat.optimize(matmul_prog, {**MM_SHAPES, 3: 4}), "3 is no name")
    expect_argument_error(lambda: eqsat.optimize(matmul_prog, {**MM_SHAPES, "m": 2.5}), "'m'", "2.5")


def test_optimize_unknown_target():
    expect_argument_error(lambda: eqsat.optimize(matmul_prog, MM_SHAPES, target="tpu9"), "target", "'tpu9'")


def test_optimize_unknown_rule_family():
    expect_argument_error(lambda: eqsat.optimize(matmul_prog, MM_SHAPES, rules=["matmull"]), "'matmull'")


def test_optimize_rules_given_as_a_string():
    """rules="matmul" (not a list) must not be read character by character ('m', 'a', ...)."""
    try:
        plan = eqsat.optimize(matmul_prog, MM_SHAPES, rules="matmul")
    except eqsat.ArgumentError as e:
        assert "rules" in str(e) or "'matmul'" in str(e), f"message does not name rules/'matmul': {e}"
    except Exception as e:  # noqa: BLE001
        pytest.fail(f"expected eqsat.ArgumentError, got {type(e).__name__}: {e}")
    else:
        assert plan.rules == ["matmul"]


def test_optimize_missing_rule_file(tmp_path):
    missing = tmp_path / "no_such_rules.py"
    expect_argument_error(lambda: eqsat.optimize(matmul_prog, MM_SHAPES, rules=[str(missing)]),
                          "no_such_rules.py")


def test_optimize_broken_rule_file(tmp_path):
    path = tmp_path / "broken_rules.py"
    path.write_text("def oops(:\n")
    with pytest.raises(eqsat.EqsatError) as ei:
        eqsat.optimize(matmul_prog, MM_SHAPES, rules=[str(path)])
    assert str(ei.value).startswith(str(path))


def test_optimize_rule_file_without_ruleset(tmp_path):
    path = tmp_path / "empty_rules.py"
    path.write_text("x = 1\n")
    with pytest.raises(eqsat.EqsatError) as ei:
        eqsat.optimize(matmul_prog, MM_SHAPES, rules=[str(path)])
    assert str(ei.value).startswith(str(path)) and "ruleset" in str(ei.value)


def test_optimize_limits_of_the_wrong_type():
    expect_argument_error(lambda: eqsat.optimize(matmul_prog, MM_SHAPES, limits={"nodes": 10}), "limits")


def test_optimize_on_an_undecorated_function():
    def plain(a: f32["M"]) -> f32["M"]:
        return a

    e = expect_argument_error(lambda: eqsat.optimize(plain, {"M": 4}), "@eqsat.program")
    assert isinstance(e, eqsat.EqsatError)


# ============================================================================ out-of-bounds accesses
def test_out_of_bounds_index_is_reported_with_its_line():
    """`x[i + 1]` for i in range(M) reads past the end. The sizes are known to optimize(),
    so the plan (at optimize or at run) must report a ProgramError at that line rather
    than let an IndexError escape from the backend."""

    @program
    def p(x: f32["M"]) -> f32["M"]:
        y = empty((M,))
        for i in range(M):
            y[i] = x[i + 1]  # ERR:oob
        return y

    x = np.arange(4, dtype=np.float32)
    try:
        plan = eqsat.optimize(p, {"M": 4})
        plan.run(x)
    except eqsat.ProgramError as e:
        check_program_error(e, "oob", "'x'", "outside 0..3", at="x[i + 1]")
    except Exception as e:  # noqa: BLE001
        pytest.fail(f"expected eqsat.ProgramError, got {type(e).__module__}.{type(e).__name__}: {e}")
    else:
        pytest.fail("an out-of-bounds read was accepted")


def test_rebinding_a_name_while_a_view_of_it_is_live():
    def build():
        @program
        def p(x: f32["M"]) -> f32["M"]:
            c = zeros((M,))
            v = c
            for i in range(2):  # (at the top a rebinding is a new name, v the old memory: desugar)
                c = x * 2.0  # ERR:rebind-viewed
            return v + c  # (c read after the loop: the loop's c is the function's c, not its own)

    expect_program_error(build, "rebind-viewed", "'c' is rebound while 'v'", "view")


def test_view_used_after_the_loop_that_bound_it():
    def build():
        @program
        def p(x: f32["M", "N"]) -> f32["N"]:
            c = zeros((M, N))
            for i in range(M):
                r = c[i]
                for j in range(N):
                    r[j] = x[i, j]
            return r  # ERR:dead-view

    expect_program_error(build, "dead-view", "'r' is a view bound inside a loop")


def test_a_name_rebound_to_other_memory_in_a_loop_and_used_after_it():
    """`y = w` inside a loop over a name that held another buffer: after the loop `y` is
    whatever the last iteration bound (it was read as the old buffer: a wrong result, and
    the plan wrote into the caller's `w`)."""
    def build():
        @program
        def p(x: f32["N"], w: f32["N", "N"]) -> f32["N", "N"]:
            y = zeros((N, N))
            for i in range(N):
                for j in range(N):
                    y = w
                y[i, i] += x[i]  # ERR:rebound-view
            return y

    expect_program_error(build, "rebound-view", "'y' is bound to another tensor's memory inside a loop")


def test_a_view_rebound_inside_a_loop():
    """`h = c` before a loop, `h = tanh(q.T @ h)` inside it: the first iteration reads c, the
    later ones the new value; the view was read as `c` in every iteration (one product
    instead of two: a wrong result). Where something writes c's memory the view is refused
    with its location (where nothing does, `h = c` is a copy: tests/test_language.py)."""
    def build():
        @program
        def p(c: f32["N", "N"], q: f32["N", "N"]) -> f32["N", "N"]:
            h = c
            for it in range(2):
                h = tanh(q.T @ h)  # ERR:view-rebound-in-loop
            c[0, 0] = 1.0
            return h + c

    expect_program_error(build, "view-rebound-in-loop", "'h' is a view (bound at line")


def test_a_view_bound_by_an_annotated_assignment_is_seen_writing():
    """`g: f32["N"] = h0` then `g[0] = 3.0` writes h0's memory: `h = h0` rebound in a loop is
    then no copy (the write through g would be lost: it was, for a moment, a wrong result)."""
    def build():
        @program
        def p(x: f32["T", "N"], h0: f32["N"]) -> f32["N"]:
            g: f32["N"] = h0
            h = h0
            g[0] = 3.0
            for t in range(T):
                h = h + x[t]  # ERR:annotated-view
            return h

    expect_program_error(build, "annotated-view", "'h' is a view (bound at line")


def test_a_carried_view_of_written_memory():
    def build():
        @program
        def p(x: f32["T", "N"], a: f32["N"]) -> f32["N"]:
            y = zeros((N,))
            h = a + 0.0
            for t in range(T):
                for j in range(N):
                    y[j] += h[j]
                x[t, 0] = 1.0
                h = x[t]  # ERR:carried-view
            return y

    expect_program_error(build, "carried-view", "'h' is bound to a view of 'x' in a loop that reads it before")


def test_partial_store_into_a_transposed_view():
    def build():
        @program
        def p(x: f32["M", "N"]) -> f32["M", "N"]:
            c = zeros((M, N))
            t = c.T
            for j in range(N):
                t[j] = x[0]  # ERR:partial-T
            return c

    expect_program_error(build, "partial-T", "part of the transposed view 't'")


def test_dimension_hiding_a_function():
    def build():
        @program
        def p(x: f32["exp"]) -> f32["exp"]:  # ERR:dim-hides
            return exp(x)

    expect_program_error(build, "dim-hides", "dimension 'exp' hides the function")


def test_zero_loop_step():
    def build():
        @program
        def p(x: f32["M"]) -> f32["M"]:
            y = zeros((M,))
            for i in range(0, M, 0):  # ERR:step0
                y[i] = x[i]
            return y

    expect_program_error(build, "step0", "step must be a nonzero integer constant")


def test_loop_step_not_constant():
    def build():
        @program
        def p(x: f32["M"]) -> f32["M"]:
            y = zeros((M,))
            for i in range(0, M, M):  # ERR:stepM
                y[i] = x[i]
            return y

    expect_program_error(build, "stepM", "step must be a nonzero integer constant")


def test_power_with_a_tensor_exponent():
    """(a number as the exponent, constant or not, is admitted: tests/test_sections.py)"""
    def build():
        @program
        def p(x: f32["M"]) -> f32["M"]:
            return x ** x  # ERR:pow-var

    expect_program_error(build, "pow-var", "takes a number as its exponent")


def test_index_product_of_loop_variables():
    def build():
        @program
        def p(x: f32["M"]) -> f32["M"]:
            y = zeros((M,))
            for i in range(M):
                for j in range(M):
                    y[(i * j) % M] = x[i]  # ERR:ij
            return y

    expect_program_error(build, "ij", "product of two loop variables")


def test_modulo_by_a_loop_variable():
    def build():
        @program
        def p(x: f32["M"]) -> f32["M"]:
            y = zeros((M,))
            for i in range(1, M):
                y[M % i] = x[i]  # ERR:modi
            return y

    expect_program_error(build, "modi", "positive constant divisor")


def test_numpy_integer_sizes_are_sizes_not_narrow_integers(tmp_program):
    """`{"M": np.uint8(200)}` once kept its width: `M * 2` was 144 in the plan (128 of 200
    results wrong) and `np.int16(200)` made `M * M` negative (a bounds error blaming the
    program). Sizes are Python ints from optimize() and reference() on; a size that is no
    int at all is an ArgumentError naming the dimension."""
    prog = tmp_program("""
@program
def up(x: f32["M"]) -> f32["M"]:
    y = empty((M * 2,))
    for i in range(M * 2):
        y[i] = x[i // 2] + 1.0
    z = empty((M * M,))
    for i in range(M * M):
        z[i] = 0.5
    s = empty((M,))
    for i in range(M):
        s[i] = y[2 * i] + y[2 * i + 1] + z[i * M]
    return s
""")
    x = np.random.default_rng(0).standard_normal(200).astype(np.float32)
    want = eqsat.reference(prog, x)
    for m in (np.uint8(200), np.int16(200), np.int64(200)):
        assert np.array_equal(eqsat.reference(prog, x, shapes={"M": m}), want)
        for target, backend in (("cpu", "numpy"), ("h100", "triton")):
            got = eqsat.optimize(prog, {"M": m}, target=target).run(x, backend=backend)
            assert np.allclose(got, want, rtol=1e-6), (m, target)
    with pytest.raises(eqsat.ArgumentError, match="dimension 'M' must be an int, got '200'"):
        eqsat.reference(prog, x, shapes={"M": "200"})


def test_a_closure_variable_shadowing_a_library_function():
    """Python calls the enclosing function's `relu`, not eqsat's: the plan once compiled
    eqsat's relu while `reference` ran the closure's (silently different results)."""
    from eqsat import relu

    def make():
        relu = lambda v: v * 2.0  # noqa: E731 - shadows the imported relu in here
        @program
        def g(x: f32["N"]) -> f32["N"]:
            return relu(x)  # ERR:closure-fn
        return g

    expect_program_error(make, "closure-fn", "'relu'", "enclosing function")
    assert relu is not None


def test_a_closure_holding_a_library_function_is_that_function():
    from eqsat import relu as eqsat_relu

    def make():
        act = eqsat_relu
        @program
        def g(x: f32["N"]) -> f32["N"]:
            return act(x) * 2.0
        return g

    g = make()
    x = np.array([-1.0, 2.0], np.float32)
    assert np.array_equal(eqsat.optimize(g, {"N": 2}).run(x), eqsat.reference(g, x))


def test_a_size_past_egglogs_integers_is_refused_plainly():
    with pytest.raises(eqsat.ArgumentError, match="too large"):
        eqsat.optimize(matmul_prog, {"M": 2**70, "K": 4, "N": 3})


def test_an_unknown_rule_family_is_named_as_such():
    """A typo in `rules=` once came back as an UnsoundRule from the rule check's probes."""
    with pytest.raises(eqsat.ArgumentError, match="unknown rule family or file 'inlien'"):
        eqsat.optimize(matmul_prog, {"M": 4, "K": 3, "N": 5}, rules=["inlien", "matmul"])
    for bad in (3, None, 2.5):  # no rule source at all
        with pytest.raises(eqsat.ArgumentError, match=f"unknown rule family or file {bad!r}"):
            eqsat.optimize(matmul_prog, {"M": 4, "K": 3, "N": 5}, rules=["matmul", bad])


def test_optimize_missing_integer_parameter_says_it_is_one():
    @program
    def shift(x: f32["N"], k: int) -> f32["N"]:
        y = empty((N,))
        for i in range(N):
            y[i] = x[i] * k
        return y

    expect_argument_error(lambda: eqsat.optimize(shift, {"N": 4}), "no value given for integer parameter(s) k")


def test_a_module_constant_the_function_assigns_is_a_local():
    """Python makes a name the function assigns local to all of it: reading it before the
    assignment raises UnboundLocalError; eqsat read the module's constant instead."""
    def build():
        @program
        def p(x: f32["N"]) -> f32["N"]:
            y = empty((N,))
            for i in range(N):
                y[i] = x[i] * SCALE  # ERR:local-before-bound
            SCALE = 3.0
            return y + SCALE

    expect_program_error(build, "local-before-bound", "'SCALE' is read before it is assigned")


SCALE = 2.0


NOT_A_FUNCTION = [1.0, 2.0]  # (a module-level object that cannot be hashed)


def test_call_of_a_module_level_list_or_another_program():
    def build():
        @program
        def p(x: f32["N"]) -> f32["N"]:
            y = NOT_A_FUNCTION(x)  # ERR:call-list
            return y

    expect_program_error(build, "call-list", "unsupported function 'NOT_A_FUNCTION'", at="NOT_A_FUNCTION(x)")

    @program
    def inner(x: f32["N"]) -> f32["N"]:
        return x

    def build2():
        @program
        def p(x: f32["N"]) -> f32["N"]:
            y = inner(x)  # ERR:call-program
            return y

    expect_program_error(build2, "call-program", "unsupported function 'inner'", at="inner(x)")


def test_an_early_return_under_the_truth_of_a_tensor_is_refused():
    """`if x: return x` before `return x`: the if changes nothing, but Python evaluates the
    truth of the array (and raises for more than one element): it is refused, not dropped."""
    def build():
        @program
        def p(x: f32["N"]) -> f32["N"]:
            if x:  # ERR:truth
                return x
            return x

    expect_program_error(build, "truth", "a condition must be a comparison", at="x")


def test_arguments_of_the_wrong_kind_are_argument_errors(tmp_path):
    """A probe's list (each was a TypeError from inside): a target or backend that is no
    name, rules that are no sources; rules given as an iterator are read once, not lost;
    a Plan says it does not pickle and what to do instead."""
    import pickle

    prog = _simple_program(tmp_path)
    shapes = {"M": 4}
    expect_argument_error(lambda: eqsat.optimize(prog, shapes, target=["cpu"]), "unknown target")
    expect_argument_error(lambda: eqsat.optimize(prog, shapes, rules=3), "rules must be")
    assert eqsat.optimize(prog, shapes, rules=iter(["inline", "algebra"])).rules == ["inline", "algebra"]
    plan = eqsat.optimize(prog, shapes)
    expect_argument_error(lambda: plan.run(np.ones(4, np.float32), backend=["numpy"]), "backend must be")
    with pytest.raises(eqsat.EqsatError, match="does not pickle"):
        pickle.dumps(plan)


def _simple_program(tmp_path):
    path = tmp_path / "simple_prog.py"
    path.write_text("from eqsat import *\n\n@program\ndef p(x: f32['M']) -> f32['M']:\n    return x * 2.0\n")
    spec = importlib.util.spec_from_file_location(f"simple_prog_{uuid.uuid4().hex}", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.p


def _optimize_in_child(queue):
    prog = _simple_program_at(queue.get())
    try:
        eqsat.optimize(prog, {"M": 4})
        queue.put("returned")
    except eqsat.EqsatError as e:
        queue.put(f"EqsatError: {e}")


def _simple_program_at(path):
    spec = importlib.util.spec_from_file_location(f"simple_prog_{uuid.uuid4().hex}", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.p


def test_a_process_forked_after_the_engine_ran_says_so_instead_of_hanging(tmp_path):
    """egglog's threads do not survive a fork: optimize() in a child forked after the parent
    had optimized never returned (a probe, with multiprocessing's default start method on
    Linux). It raises at once, saying which start method to use."""
    import multiprocessing

    prog = _simple_program(tmp_path)
    eqsat.optimize(prog, {"M": 4})  # the engine has run in this process
    ctx = multiprocessing.get_context("fork")
    queue = ctx.Queue()
    queue.put(str(tmp_path / "simple_prog.py"))
    child = ctx.Process(target=_optimize_in_child, args=(queue,))
    child.start()
    child.join(60)
    if child.is_alive():
        child.kill()
        pytest.fail("optimize() in the forked child did not return")
    got = queue.get(timeout=5)
    assert got.startswith("EqsatError") and "spawn" in got, got


@pytest.mark.parametrize("name, text, phrase", [
    ("empty.py", "", "must define `ruleset`"), ("syntax.py", "def (\n", "SyntaxError"),
    ("three.py", "ruleset = 3\n", "got int"), ("rules.txt", "x", "a Python file (.py)"),
    # (a probe's: sys.exit() in a rule file ended the caller's process from inside optimize())
    ("exits.py", "import sys\nsys.exit(3)\n", "SystemExit"),
])
def test_a_rule_file_that_does_not_load_is_bad_input_not_an_unsound_rule(tmp_path, name, text, phrase):
    """A rule file with a syntax error, no `ruleset`, or no Python at all was reported as an
    unsound rule (a probe program 'failed with it'): it is an ArgumentError naming the file."""
    path = tmp_path / name
    path.write_text(text)
    prog = _simple_program(tmp_path)
    e = expect_argument_error(lambda: eqsat.optimize(prog, {"M": 4}, rules=["algebra", str(path)]), phrase)
    from eqsat.rulecheck import UnsoundRule

    assert str(path) in str(e) and not isinstance(e, UnsoundRule)


def _import_file(path: Path, name: str):
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_a_program_parsed_again_reads_the_text_it_was_imported_from(tmp_path):
    """A module-level constant changed after import makes optimize() parse the program again
    (`Program.current`). It read the file, which had been edited since (found by a probe,
    2026-11-28): the plan computed `x + SCALE` where Python and `reference` run `x * SCALE`.
    Now the text read at decoration is parsed again."""
    path = tmp_path / "edited_prog.py"
    src = "from eqsat import *\nSCALE = 2.0\n@program\ndef q(x: f32['M']) -> f32['M']:\n    return x * SCALE\n"
    path.write_text(src)
    mod = _import_file(path, f"edited_prog_{uuid.uuid4().hex}")
    path.write_text(src.replace("x * SCALE", "x + SCALE"))
    mod.SCALE = 3.0
    x = np.arange(4, dtype=np.float32)
    got = eqsat.optimize(mod.q, {"M": 4}).run(x)
    assert np.array_equal(got, eqsat.reference(mod.q, x)) and np.array_equal(got, x * 3.0), got


def test_a_function_compiled_from_other_text_than_its_file_is_refused(tmp_path):
    """A function compiled from a string under a real file's name: eqsat reads the file, which
    holds another function of the same name; refused, not planned from the wrong text."""
    path = tmp_path / "cell.py"
    path.write_text("@program\ndef q(x: f32['M']) -> f32['M']:\n    return x + 100.0\n")
    ns = {"program": program, "f32": f32}
    with pytest.raises(eqsat.ProgramError, match="not the function Python runs"):
        exec(compile("@program\ndef q(x: f32['M']) -> f32['M']:\n    return x * 2.0\n", str(path), "exec"), ns)


def test_program_called_with_no_function_says_how_to_write_it():
    with pytest.raises(eqsat.ProgramError, match="not `@program\\(\\)`"):
        @program()
        def p(x: f32["M"]) -> f32["M"]:
            return x


def test_a_division_of_python_numbers_by_zero_is_refused(tmp_path):
    """`x[i] + i // 0` raises ZeroDivisionError in Python; a plan returned numbers (found by a
    probe, 2026-11-28). Refused where it is written; an element divided by zero is numpy's
    inf, which a plan computes too."""
    path = tmp_path / "divzero.py"
    path.write_text("from eqsat import *\n@program\ndef p(x: f32['M']) -> f32['M']:\n"
                    "    y = zeros((M,))\n    for i in range(M):\n        y[i] = x[i] + i // 0\n    return y\n")
    with pytest.raises(eqsat.ProgramError, match=r"divzero.py:6:.*`i // 0`.*ZeroDivisionError"):
        _import_file(path, f"divzero_{uuid.uuid4().hex}")


@pytest.mark.parametrize("call, phrase", [
    ("np.sum(a, axis=2)", "axis `2` is not an axis of 'a', which has 2 axes"),
    ("a.max(axis=-3)", "axis `-3` is not an axis"),
    ("np.sum(a, dtype=np.float64)", "the keyword `dtype=` is not read"),
    ("np.max(a, 1, where=a > 0)", "the keyword `where=` is not read"),
])
def test_a_reduction_of_a_declared_tensor_names_what_is_wrong_with_its_arguments(tmp_path, call, phrase):
    """A probe's: these said "its operand's shape is not known", of a parameter whose shape
    is declared."""
    path = tmp_path / f"red_{uuid.uuid4().hex}.py"
    path.write_text(f"import numpy as np\nfrom eqsat import *\n@program\ndef p(a: f32['M', 'N']) -> f32['M']:\n"
                    f"    return {call}\n")
    with pytest.raises(eqsat.ProgramError, match=re.escape(phrase)) as ei:
        _import_file(path, path.stem)
    assert f"{path}:5:" in str(ei.value)


@pytest.mark.parametrize("note", ["int", "None", "float"])
def test_a_return_annotation_that_contradicts_the_returned_tensor_is_refused(tmp_path, note):
    """A probe's: `-> int` and `-> None` over a returned tensor were accepted silently."""
    path = tmp_path / f"ret_{uuid.uuid4().hex}.py"
    path.write_text(f"from eqsat import *\n@program\ndef p(x: f32['M']) -> {note}:\n    return x * 2.0\n")
    with pytest.raises(eqsat.ProgramError, match="annotation declares") as ei:
        _import_file(path, path.stem)
    assert f"{path}:4:" in str(ei.value)


def test_a_name_bound_to_a_joined_array_and_again_in_a_loop_is_told_what_to_write(tmp_path):
    """A probe's (npbench's nbody): the message called `acc = np.hstack(...)` a view and
    suggested `acc = eqsat_new0 + 0.0`, a temporary the user never wrote."""
    path = tmp_path / f"join_{uuid.uuid4().hex}.py"
    path.write_text("import numpy as np\nfrom eqsat import *\n@program\n"
                    "def p(a: f32['N', 1], b: f32['N', 1], T: int) -> f32['N', 2]:\n"
                    "    acc = np.hstack((a, b))\n    for t in range(T):\n"
                    "        acc = np.hstack((a * acc[:, 0:1], b))\n    return acc\n")
    with pytest.raises(eqsat.ProgramError) as ei:
        _import_file(path, path.stem)
    text = str(ei.value)
    assert f"{path}:7:" in text and "line 5" in text and "`acc[:] = ...`" in text and "eqsat_" not in text, text


def test_a_program_under_a_decorator_written_on_several_lines_is_read(tmp_path):
    """The check that the text read is the function's code (its lines start at the first
    decorator) must not refuse a decorator call spanning lines above `@program`."""
    path = tmp_path / f"deco_{uuid.uuid4().hex}.py"
    path.write_text("from eqsat import *\n\ndef deco(*a):\n    return lambda f: f\n\n\n@deco(\n    1,\n    2)\n"
                    "@program\ndef p(x: f32['M']) -> f32['M']:\n    return x * 2.0\n")
    mod = _import_file(path, path.stem)
    x = np.arange(3, dtype=np.float32)
    assert np.array_equal(eqsat.optimize(mod.p, {"M": 3}).run(x), x * 2.0)


@pytest.mark.parametrize("call, shapes, raises", [
    ("np.max(x)", {"M": 0, "K": 4}, True), ("x.min()", {"M": 3, "K": 0}, True),
    ("np.max(x, axis=1)", {"M": 3, "K": 0}, True), ("np.max(x, axis=1)", {"M": 0, "K": 4}, False),
    ("np.max(x)", {"M": 3, "K": 4}, False),
])
def test_a_max_over_an_axis_of_size_zero_is_an_error_as_in_numpy(tmp_path, call, shapes, raises):
    """numpy raises where a max or min reduces an axis of size 0; a plan returned -inf (a
    probe's, 2026-11-28). Asserted on the sizes: an ArgumentError naming the line."""
    path = tmp_path / f"mx_{uuid.uuid4().hex}.py"
    out = "f32['M']" if "axis" in call else "f32"
    path.write_text(f"import numpy as np\nfrom eqsat import *\n@program\ndef p(x: f32['M', 'K']) -> {out}:\n"
                    f"    return {call}\n")
    mod = _import_file(path, path.stem)
    if raises:
        with pytest.raises(eqsat.ArgumentError, match=f"{path}:5:.*zero-size array"):
            eqsat.optimize(mod.p, shapes)
    else:
        x = np.random.default_rng(0).standard_normal((shapes["M"], shapes["K"])).astype(np.float32)
        np.testing.assert_array_equal(eqsat.optimize(mod.p, shapes).run(x), eqsat.reference(mod.p, x))


@pytest.mark.parametrize("body, shapes, fails_at", [
    # numpy raises at the first i where the slice is empty; the loops gave -inf there
    ("    for i in range(M):\n        out[i] = np.max(x[i, :i])\n", {"M": 4, "K": 4}, "i=0"),
    ("    for i in range(M):\n        out[i] = x[i, :].min()\n", {"M": 4, "K": 0}, "i=0"),
    ("    for i in range(M):\n        out[i] = np.max(x[i, i + 1:])\n", {"M": 4, "K": 4}, "i=3"),
    ("    for i in range(M):\n        assert i + 1 < M\n        out[i] = x[i, 0]\n", {"M": 4, "K": 4}, "i=3"),
    # a condition on data values is taken to hold: where it may not, the program is refused
    ("    for i in range(M):\n        if x[i, 0] > 0.0:\n            out[i] = np.max(x[i, :i])\n", {"M": 4, "K": 4},
     "i=0"),
    # where it cannot fail: run and compared with numpy
    ("    for i in range(M):\n        if i > 0:\n            out[i] = np.max(x[i, :i])\n", {"M": 4, "K": 4}, None),
    ("    for i in range(1, M):\n        out[i] = np.min(x[i, :i])\n", {"M": 4, "K": 4}, None),
    ("    for i in range(M):\n        out[i] = np.max(x[i, :i]) if i > 0 else 2.0\n", {"M": 4, "K": 4}, None),
    ("    for i in range(M):\n        out[i] = np.max(x[i, :])\n", {"M": 0, "K": 0}, None),
    ("    for i in range(M):\n        assert i < M\n        out[i] = x[i, 0]\n", {"M": 4, "K": 4}, None),
    # a band written with abs (isl reads abs, max and min: it was taken for a condition on
    # data, and the assert refused at i=3, j=0, which the band never reaches; a probe's)
    ("    for i in range(M):\n        for j in range(K):\n            if abs(i - j) <= 1 and max(i, j) < K:\n"
     "                assert j >= i - 1\n                out[i] = x[i, j]\n", {"M": 4, "K": 4}, None),
    # constants and an integer's truth: an unreachable branch's `assert False`
    ("    for i in range(M):\n        if i >= M:\n            assert False\n        assert i + 1\n"
     "        out[i] = x[i, 0]\n", {"M": 4, "K": 4}, None),
    ("    for i in range(M):\n        if i == 2:\n            assert False, 'no'\n        out[i] = x[i, 0]\n",
     {"M": 4, "K": 4}, "i=2"),
])
def test_an_assertion_inside_loops_holds_at_every_iteration(tmp_path, body, shapes, fails_at):
    """`np.max` of a slice that is empty at some iteration (`x[i, :i]` at i = 0) raises in
    numpy; the plan returned -inf (session 27). The desugaring asserts the slice non-empty
    where the statement runs, and so may the user (`assert i + 1 < M`): checked exactly
    (isl) on the iterations the enclosing loops and affine conditions allow, an
    ArgumentError naming the line and an iteration where it fails."""
    path = tmp_path / f"lm_{uuid.uuid4().hex}.py"
    path.write_text("import numpy as np\nfrom eqsat import *\n@program\ndef p(x: f32['M', 'K']) -> f32['M']:\n"
                    "    out = zeros((M,))\n" + body + "    return out\n")
    mod = _import_file(path, path.stem)
    line = 5 + next(k for k, text in enumerate(body.splitlines(), 1) if "np." in text or "min()" in text or
                    "assert" in text)
    if fails_at:
        with pytest.raises(eqsat.ArgumentError, match=f"{path}:{line}:.*false at {fails_at}"):
            eqsat.optimize(mod.p, shapes)
    else:
        x = np.random.default_rng(0).standard_normal((shapes["M"], shapes["K"])).astype(np.float32)
        np.testing.assert_array_equal(eqsat.optimize(mod.p, shapes).run(x), eqsat.reference(mod.p, x))


@pytest.mark.parametrize("body, shapes, zero_at", [
    # a divisor of loop variables and sizes zero at one iteration, or at these sizes: Python
    # raises ZeroDivisionError there; the plans returned inf, or 0 for `//` (a probe's, session 28)
    ("    for i in range(M):\n        out[i] = x[i, 0] + 1.0 / (i - 2)\n", {"M": 5, "K": 2}, "at i=2"),
    ("    for i in range(M):\n        out[i] = x[i, 0] + i // (M - M)\n", {"M": 5, "K": 2}, "at i=0 with M=5"),
    ("    for i in range(M):\n        out[i] = x[i, 0] + M % (i - 3)\n", {"M": 5, "K": 2}, "at i=3"),
    ("    out = x[:, 0] + 1.0 / (K - 6)\n", {"M": 5, "K": 6}, "with K=6"),
    ("    for i in range(M):\n        for j in range(i + 1, K):\n            out[i] += float(x[i, j]) / (j - i - 1)\n",
     {"M": 3, "K": 4}, "at i=0, j=1"),
    # not affine: evaluated at each iteration
    ("    for i in range(M):\n        out[i] = x[i, 0] + 1.0 / (i * i - 4)\n", {"M": 5, "K": 2}, "at i=2"),
    # a condition on data values is taken to hold
    ("    for i in range(M):\n        if x[i, 0] > 0.0:\n            out[i] = 1.0 / (i - 1)\n", {"M": 4, "K": 2},
     "at i=1 .taking every condition"),
    # where it is never zero, or never evaluated there: run and compared with numpy
    ("    for i in range(M):\n        out[i] = x[i, 0] + 1.0 / (i - 2)\n", {"M": 2, "K": 2}, None),
    ("    for i in range(M):\n        out[i] = x[i, 0] + (1.0 / (i - 2) if i != 2 else 0.0)\n", {"M": 5, "K": 2},
     None),
    ("    for i in range(M):\n        if i != 2:\n            out[i] = x[i, 0] * (1.0 / (i - 2))\n", {"M": 5, "K": 2},
     None),
    ("    for i in range(M):\n        out[i] = x[i, 0] + 1.0 / (i - 2.5)\n", {"M": 5, "K": 2}, None),
    # a float32 numerator: numpy divides (inf, no error), as the plan does
    ("    for i in range(M):\n        out[i] = x[i, 0] / (i - 2)\n", {"M": 5, "K": 2}, None),
])
def test_a_division_by_zero_of_python_numbers_is_refused(tmp_path, body, shapes, zero_at):
    """A divisor made of loop variables and sizes that is zero at an iteration that runs
    the division (`bounds.check_divisor`): Python raises ZeroDivisionError there, so
    optimize() raises an ArgumentError naming the line and the iteration."""
    path = tmp_path / f"dz_{uuid.uuid4().hex}.py"
    path.write_text("import numpy as np\nfrom eqsat import *\n@program\ndef p(x: f32['M', 'K']) -> f32['M']:\n"
                    "    out = zeros((M,))\n" + body + "    return out\n")
    mod = _import_file(path, path.stem)
    line = 5 + next(k for k, text in enumerate(body.splitlines(), 1) if "/" in text or "%" in text)
    if zero_at:
        with pytest.raises(eqsat.ArgumentError, match=f"{path}:{line}:.*which is zero {zero_at}.*ZeroDivisionError"):
            eqsat.optimize(mod.p, shapes)
    else:
        x = np.random.default_rng(0).standard_normal((shapes["M"], shapes["K"])).astype(np.float32)
        with np.errstate(divide="ignore"):
            want = eqsat.reference(mod.p, x)
            np.testing.assert_array_equal(eqsat.optimize(mod.p, shapes).run(x), want)
