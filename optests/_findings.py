"""Stages, outcomes and the finding exceptions. Torch-free: the plugin and the CLI import this."""

from __future__ import annotations

import contextlib
import dataclasses
import enum
from collections.abc import Iterator

from ._errors import OptestsError


class Stage(str, enum.Enum):
    """Where a sample failed. The values are contract words: results files and the registry use them."""

    #: The sample fails in plain eager mode: a problem with the sample, not with compile.
    EAGER = "eager"
    #: Compiling (tracing) the call raised.
    TRACE = "trace"
    #: Compiled outputs differ from eager outputs.
    FORWARD = "forward"
    #: Compiled gradients differ from eager gradients, or the compiled backward raised.
    BACKWARD = "backward"
    #: dtype, shape, strides, requires_grad or aliasing differ (eager vs compiled, or trace vs real).
    METADATA = "metadata"
    #: The compiled call mutates inputs differently from eager, or the trace hides a mutation.
    MUTATION = "mutation"
    #: A finding on randomized input data, against the same compiled function.
    RANDOMIZED = "randomized"
    #: A later call of a sequence on one compiled function differs from eager (the first call's
    #: finding keeps its own stage).
    SEQUENCE = "sequence"
    #: The process running the sample died.
    CRASH = "crash"
    #: The sample ran past its time limit.
    TIMEOUT = "timeout"

    def __str__(self) -> str:
        return self.value


class Outcome(str, enum.Enum):
    """What happened to one sample in one mode."""

    PASSED = "passed"
    FAILED = "failed"
    SKIPPED = "skipped"
    #: The op has no samples for this dtype/device, or a derived sample is not a valid call
    #: (recorded, never silently dropped).
    NOT_APPLICABLE = "not_applicable"

    def __str__(self) -> str:
        return self.value


class Verdict(str, enum.Enum):
    """How the expected-failures registry judges an outcome (results record it as ``verdict``)."""

    PASSED = "passed"
    #: Failed as the registry expects.
    XFAILED = "xfailed"
    #: Not run: a skip entry covers it.
    SKIPPED = "skipped"
    NOT_APPLICABLE = "not_applicable"
    #: Its outcomes differ between tries (a failure checked again in a fresh process passed, or
    #: the reverse: ``--optests-reruns``), or it failed where a ``flaky`` entry covers it.
    FLAKY = "flaky"
    #: Failed with no entry.
    UNEXPECTED_FAILURE = "unexpected_failure"
    #: Failed at another stage than the entry says.
    STAGE_CHANGED = "stage_changed"
    #: Passed although an xfail entry expects a failure (strict).
    UNEXPECTED_PASS = "unexpected_pass"

    @property
    def ok(self) -> bool:
        """Whether the verdict leaves the run green."""
        return self in (Verdict.PASSED, Verdict.XFAILED, Verdict.SKIPPED, Verdict.NOT_APPLICABLE, Verdict.FLAKY)

    def __str__(self) -> str:
        return self.value


def shape_message(what: str, actual: object, expected: object, context: str) -> str:
    """The one message shape of the house: ``what=actual, but expected expected [context]``."""
    return f"{what}={actual}, but expected {expected} [{context}]"


class Finding(AssertionError):
    """Base of every finding raised by :func:`optests.aot_autograd_check`.

    ``summary`` is one line in the house shape; ``detail`` says which output, gradient or input
    and by how much; ``repro`` is a script that reproduces the finding. Catch this class to
    handle any finding; look at ``stage`` to know what kind it is.
    """

    stage: Stage = Stage.FORWARD

    def __init__(self, what: str, actual: object, expected: object, context: str, detail: str = "", repro: str = "") -> None:
        self.what = what
        self.actual = actual
        self.expected = expected
        self.context = context
        self.summary = shape_message(what, actual, expected, context)
        self.detail = detail
        self.repro = repro
        #: ``(args, kwargs)`` of the call that showed the finding (for randomized findings, the
        #: random data), set by the check; ``None`` if unknown.
        self.inputs: tuple[tuple[object, ...], dict[str, object]] | None = None
        #: The keyword arguments of the check that found it (``dynamic``, ``check_gradients``,
        #: ``assert_equals_fn``, ``randomized_sample``, ``context``, ...), set by the check: with
        #: the op and its original inputs, what a standalone repro script needs; ``None`` if unknown.
        self.options: dict[str, object] | None = None
        super().__init__(self.summary)

    def __reduce__(self) -> tuple[object, ...]:
        # so that a finding crosses processes (the runner's child) with its fields intact
        return (type(self), (self.what, self.actual, self.expected, self.context, self.detail, self.repro), self.__dict__)

    def __str__(self) -> str:
        parts = [f"[{self.stage}] {self.summary}"]
        if self.detail:
            parts.append(self.detail)
        if self.repro:
            parts.append("Repro:\n" + self.repro)
        return "\n".join(parts)


class EagerFailure(Finding):
    """The sample fails without compile. Fix the sample (or the op's eager kernel) first."""

    stage = Stage.EAGER


class TraceFailure(Finding):
    """AOTAutograd could not trace the call. Read ``__cause__``: often a fake kernel that is
    missing or reads tensor data, or Python control flow on tensor values."""

    stage = Stage.TRACE


class ForwardMismatch(Finding):
    """Compiled outputs differ from eager. The op is not traceable as written, or its trace
    (fake kernel, decomposition) computes something else."""

    stage = Stage.FORWARD


class BackwardMismatch(Finding):
    """Compiled gradients differ from eager, or the compiled backward raised. Check the
    registered backward formula: is it traceable, and free of hidden state?"""

    stage = Stage.BACKWARD


class MetadataMismatch(Finding):
    """An output's dtype, shape, strides, requires_grad or aliasing disagree, between eager and
    compiled or between what the trace predicted (the fake/meta kernel) and what really ran.
    Fix the fake kernel (``register_fake``) or the op's schema."""

    stage = Stage.METADATA


class MutationMismatch(Finding):
    """Inputs are mutated differently by the compiled call than by eager, or eager mutates an
    input that the traced graph does not. Declare mutations in the schema (``mutates_args``)."""

    stage = Stage.MUTATION


class RandomizedMismatch(Finding):
    """A finding that shows only on randomized input data: values were baked into the trace,
    or the op behaves differently on other data."""

    stage = Stage.RANDOMIZED


class SequenceMismatch(Finding):
    """A later call of a sequence on one compiled function (other sizes, scalars, layouts, grad
    mode...) differs from eager, where the first call agreed: a guard that did not fire, a
    recompile that went wrong, a fake kernel wrong for the new inputs. ``what`` names the call
    and what changed; ``detail`` the stage the call alone would have had."""

    stage = Stage.SEQUENCE


FINDING_CLASSES: dict[Stage, type[Finding]] = {
    cls.stage: cls
    for cls in (
        EagerFailure,
        TraceFailure,
        ForwardMismatch,
        BackwardMismatch,
        MetadataMismatch,
        MutationMismatch,
        RandomizedMismatch,
        SequenceMismatch,
    )
}


@dataclasses.dataclass(frozen=True)
class CheckResult:
    """The answer of the non-raising form, :func:`optests.run_check`, for one call."""

    outcome: Outcome
    #: The stage of the finding; ``None`` when the call passed.
    stage: Stage | None = None
    #: The one-line summary in the house shape; empty when passed.
    message: str = ""
    #: Which output, gradient or input, and by how much.
    detail: str = ""
    #: A script that reproduces the finding.
    repro: str = ""
    #: Wall seconds the check took.
    duration: float = 0.0
    #: The finding itself, for callers that want to raise it.
    error: Finding | None = dataclasses.field(default=None, compare=False, repr=False)
    #: What the check noted on a pass, e.g. a difference put down to float32 rounding.
    notes: tuple[str, ...] = ()

    @property
    def passed(self) -> bool:
        return self.outcome is Outcome.PASSED


#: How much of an error's first line a message keeps.
_MAX_ERROR_CHARS = 300


class UserBaseException(OptestsError):
    """A ``BaseException`` that is not an ``Exception`` (``SystemExit``, ``KeyboardInterrupt``, a
    class of the user's), raised by user code that a check runs (the op, its backward, the
    backend): raised in its place (:func:`user_code`), so that the check takes it as it takes any
    error of that code, a finding. :func:`error_line` names the original."""

    def __init__(self, error: BaseException) -> None:
        super().__init__(str(error))
        self.error = error


#: Whether a ``KeyboardInterrupt`` is the user code's own (:func:`user_code`): in the runner's
#: child, whose process group is its own, Ctrl-C reaches only its parent. Elsewhere it is Ctrl-C.
interrupts_are_raised = False


@contextlib.contextmanager
def user_code() -> Iterator[None]:
    """Run user code: a ``BaseException`` it raises that is not an ``Exception`` comes out as a
    :class:`UserBaseException`; a ``KeyboardInterrupt`` only where it cannot be Ctrl-C
    (:data:`interrupts_are_raised`)."""
    try:
        yield
    except Exception:
        raise
    except KeyboardInterrupt as e:
        if not interrupts_are_raised:
            raise
        raise UserBaseException(e) from e
    except BaseException as e:
        raise UserBaseException(e) from e


#: The first lines of Dynamo's errors that say only where tracing failed; what failed is in the
#: ``Explanation:`` that follows (the error the op raised on fake tensors, the schema it refused).
_DYNAMO_HEADERS = ("RuntimeError when making fake tensor call", "Error when attempting to resolve op packet")


def _explained(text: list[str]) -> str:
    """What a Dynamo error's ``Explanation:`` says failed: the error after ``got`` (an op's on fake
    tensors), or the line after an explanation that ends in a colon (a schema that refused)."""
    for i, line in enumerate(text):
        explanation = line.strip().removeprefix("Explanation:").strip()
        if explanation == line.strip():
            continue
        if "): got " in explanation:
            return "got " + explanation.rsplit("): got ", 1)[1].split("\\n")[0]  # an error's repr: its first line
        following = [rest.strip() for rest in text[i + 1 :] if rest.strip()]
        if (not explanation or explanation.endswith(":")) and following:
            return following[0]
        return explanation or "no explanation given"
    return "no explanation given"


def error_line(e: BaseException) -> str:
    """``Type: first line of the message`` (cut to 300 characters): how findings, refusals and
    internal errors name an exception. A message's later lines (a CUDA error's advice) are left
    out."""
    if isinstance(e, UserBaseException):
        e = e.error
    text = str(e).strip().splitlines()
    first = text[0] if text else ""
    if first in _DYNAMO_HEADERS:
        first += f": {_explained(text)}"
    if len(first) > _MAX_ERROR_CHARS:
        first = first[: _MAX_ERROR_CHARS - 3] + "..."
    return f"{type(e).__name__}: {first}" if first else type(e).__name__
