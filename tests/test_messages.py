"""Golden finding messages. Rewrite them after an intended change with EXPECTTEST_ACCEPT=1."""

from __future__ import annotations

import re

import expecttest
import pytest
import torch
from corpus import BUGS

import optests
from optests._findings import error_line


def _message(bug: str, dynamic: bool = False) -> str:
    func, make, _, kwargs = BUGS[bug]
    args, kw = make()
    result = optests.run_check(func, args, kw, dynamic, **kwargs)
    assert result.error is not None
    # the repro embeds tensor values; the golden text keeps only its shape
    return re.sub(r"torch\.tensor\(\[.*?\]\], dtype", "torch.tensor([[...]], dtype", str(result.error))


@pytest.mark.filterwarnings("ignore::UserWarning")
class TestMessages(expecttest.TestCase):
    def test_wrong_fake_shape(self) -> None:
        self.assertExpectedInline(
            _message("fake_wrong_shape"),
            """\
[metadata] traced out.shape=[4, 4], but expected [3, 4] [optests_corpus::fake_wrong_shape static]
The trace (fake/meta kernels) predicted this; the real kernel disagrees; the compiled call then raised RuntimeError: Function GeneratedBackwardFor_optests_corpus_fake_wrong_shape_defaultBackward returned an invalid gradient at index 0 - got [4, 4] but expected shape compatible with [3, 4].
Repro:
import torch
from optests import aot_autograd_check
import corpus  # registers optests_corpus::fake_wrong_shape
func = torch.ops.optests_corpus.fake_wrong_shape.default
args = [torch.tensor([[...]], dtype=torch.float32).requires_grad_()]
kwargs = {}
aot_autograd_check(func, args, kwargs, dynamic=False)""",
        )

    def test_second_output(self) -> None:
        self.assertExpectedInline(
            _message("second_output_wrong_fake", dynamic=True),
            """\
[metadata] traced out[1].shape=[3], but expected [4] [optests_corpus::second_output_wrong_fake dynamic]
The trace (fake/meta kernels) predicted this; the real kernel disagrees.
Repro:
import torch
from optests import aot_autograd_check
import corpus  # registers optests_corpus::second_output_wrong_fake
func = torch.ops.optests_corpus.second_output_wrong_fake.default
args = [torch.tensor([[...]], dtype=torch.float32)]
kwargs = {}
aot_autograd_check(func, args, kwargs, dynamic=True, check_gradients=False)""",
        )

    def test_undeclared_mutation(self) -> None:
        self.assertExpectedInline(
            _message("undeclared_mutation"),
            """\
[mutation] traced mutation of args[0]=none, but expected a mutation (eager mutates it) [optests_corpus.undeclared_mutation.default static]
Eager changed this input, but the traced graph does not write to it: the op's schema does not declare the mutation (mutates_args / `Tensor(a!)`), so a compiler may reorder or drop it.
Repro:
import torch
from optests import aot_autograd_check
func = torch.ops.optests_corpus.undeclared_mutation.default
args = [torch.tensor([[...]], dtype=torch.float32)]
kwargs = {}
aot_autograd_check(func, args, kwargs, dynamic=False, check_gradients='auto')""",
        )

    def test_value_mismatch(self) -> None:
        self.assertExpectedInline(
            _message("subclass_sensitive"),
            """\
[forward] out=max abs diff 1.41112 at [2, 0] (got 0.752295, eager -0.658826), max rel diff 4.43259, 12 of 12 elements differ, but expected equal to eager within tolerance [subclass_sensitive static]
assert_equals_fn said: Tensor-likes are not close!
  Mismatched elements: 12 / 12 (100.0%)
  Greatest absolute difference: 1.4111213684082031 at index (2, 0) (up to 1e-05 allowed)
  Greatest relative difference: 4.432590961456299 at index (2, 3) (up to 1.3e-06 allowed)
Repro:
import torch
from optests import aot_autograd_check
import corpus
func = corpus.subclass_sensitive
args = [torch.tensor([[...]], dtype=torch.float32).requires_grad_()]
kwargs = {}
aot_autograd_check(func, args, kwargs, dynamic=False)""",
        )

    def test_backward_does_not_trace(self) -> None:
        self.assertExpectedInline(
            _message("numpy_backward"),
            """\
[backward] compiled call=raised RuntimeError: .numpy() is not supported for tensor subclasses., but expected no error [optests_corpus::numpy_backward static]
The forward alone compiles (inputs detached), so tracing the backward failed: check that the backward formula is traceable (no numpy, no .item(), no Python branch on tensor values).
Repro:
import torch
from optests import aot_autograd_check
import corpus  # registers optests_corpus::numpy_backward
func = torch.ops.optests_corpus.numpy_backward.default
args = [torch.tensor([[...]], dtype=torch.float32).requires_grad_()]
kwargs = {}
aot_autograd_check(func, args, kwargs, dynamic=False)""",
        )

    def test_randomized(self) -> None:
        self.assertExpectedInline(
            _message("memoized_scale"),
            """\
[randomized] out=max abs diff 0.192827 at [2, 2] (got 0.246543, eager 0.43937), max rel diff 0.438872, 12 of 12 elements differ, but expected equal to eager within tolerance [memoized_scale static]
[forward, on randomized inputs: uniform [0, 1) noise] assert_equals_fn said: Tensor-likes are not close!
  Mismatched elements: 12 / 12 (100.0%)
  Greatest absolute difference: 0.19282719492912292 at index (2, 2) (up to 1e-05 allowed)
  Greatest relative difference: 0.4388718903064728 at index (0, 3) (up to 1.3e-06 allowed)
Repro:
import torch
from optests import aot_autograd_check
import corpus
func = corpus.memoized_scale
args = [torch.tensor([[...]], dtype=torch.float32).requires_grad_()]
kwargs = {}
aot_autograd_check(func, args, kwargs, dynamic=False, try_check_data_specialization=True)""",
        )


def test_context_labels_the_message() -> None:
    func, make, _, kwargs = BUGS["fake_wrong_dtype"]
    args, kw = make()
    result = optests.run_check(func, args, kw, False, context="mylib.op static float32 cpu sample 3", **kwargs)
    assert result.message == "traced out.dtype=float64, but expected float32 [mylib.op static float32 cpu sample 3]"


def _one_value_per_channel(x: torch.Tensor) -> torch.Tensor:
    return torch.native_batch_norm(x, None, None, torch.zeros(1), torch.ones(1), True, 0.1, 1e-5)[0]


class TestDynamoErrors(expecttest.TestCase):
    def test_a_dynamo_error_that_says_only_where_it_failed_is_named_by_what_failed(self) -> None:
        """Dynamo's first line says tracing failed on fake tensors; the message names what the op
        raised there (findings/batch_norm_one_value_per_channel_zero_division.py)."""
        with self.assertRaises(Exception) as raised:
            torch.compile(_one_value_per_channel, backend="aot_eager", fullgraph=True)(torch.randn(1, 1, 1))
        self.assertExpectedInline(
            error_line(raised.exception),
            """TorchRuntimeError: RuntimeError when making fake tensor call: got ZeroDivisionError('float division by zero')""",
        )

    def test_an_explanation_that_ends_in_a_colon_is_named_by_its_next_line(self) -> None:
        text = "Error when attempting to resolve op packet\n  Explanation: failed to match any schema:\n    aten::f() Expected 'List[int]'\n"
        self.assertExpectedInline(
            error_line(RuntimeError(text)),
            """RuntimeError: Error when attempting to resolve op packet: aten::f() Expected 'List[int]'""",
        )
        self.assertExpectedInline(error_line(RuntimeError("other\n  Explanation: x")), """RuntimeError: other""")
        bare = "RuntimeError when making fake tensor call\n  Explanation:\n"
        self.assertExpectedInline(
            error_line(RuntimeError(bare)), """RuntimeError: RuntimeError when making fake tensor call: no explanation given"""
        )
