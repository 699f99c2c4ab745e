"""What every call pattern shares: the :class:`CallPattern` interface, what one call made
(:class:`Called`), and the error of a call PyTorch does not support (:class:`Unsupported`)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

import torch

from .._findings import error_line
from ..errors import DependsOnCpu as DependsOnCpu
from ..errors import Unsupported as Unsupported


@dataclass
class Called:
    """What one call made, as :meth:`CallPattern.call` returns it."""

    #: The function's outputs as it returned them (after any use the pattern made of them): the
    #: check's metadata comparisons look at these, and :meth:`CallPattern.gradients` gets them.
    out: Any
    #: What the check compares as the outputs (``subclass``: the inner tensors of each output).
    compared: Any
    #: Each step the pattern took beside the call (``out[0].mul_(2)``, a backward), with the
    #: error it raised: where eager and compiled differ, that is a finding.
    refused: list[Refusal] = field(default_factory=list)
    #: What :meth:`CallPattern.gradients` needs besides ``out`` (``subclass``: the wrapped inputs).
    state: Any = None
    #: Where :meth:`CallPattern.gradients` returns several rounds of gradients (one per output, or
    #: first and second order), what each round is; each round has one entry per input that
    #: requires grad. Empty: one round.
    rounds: tuple[str, ...] = ()
    #: The pattern changed the outputs after the call (``outputs``), and with them the inputs they
    #: view: an input's change is then not all the traced program's doing.
    touched: bool = False
    #: The lower precision the call computed in (``autocast``: bfloat16 on CPU), or None: where
    #: eager's result shows that precision's rounding, the compiled one's may show it too.
    precision: torch.dtype | None = None
    #: The tangents (``grad_outputs``) the backward took, where the pattern draws them
    #: (``tangents``), one per output that requires grad; None: the pattern's own loss. Where it
    #: is given before :meth:`CallPattern.gradients`, the backward takes these: the float64
    #: reference gives eager's, widened in their layouts, so its gradients are of the same tangents.
    tangents: list[torch.Tensor] | None = None
    #: The inputs hold special values (``special``): outputs must hold NaN exactly where eager's
    #: do and zeros of eager's sign, and values (outputs, mutated inputs and gradients, where
    #: checked) compare with NaN equal to NaN, whatever ``assert_equals_fn`` says of NaN.
    specials: bool = False
    #: What the pattern saw beside the outputs and gradients (the RNG state after the call, the
    #: gradients a hook was called with, a retained ``.grad``), in order: each compared, eager's
    #: against the compiled call's, after the gradients (:func:`optests._check._comparisons._observed`).
    observed: list[Observed] = field(default_factory=list)
    #: The call ran under ``torch._inductor.config.fallback_random=True`` (``rng``): inductor then
    #: draws random numbers as eager does, and the values of a call that draws them are compared.
    fallback_random: bool = False


@dataclass(frozen=True)
class Observed:
    """One thing a pattern saw beside the call's outputs, compared eager vs compiled."""

    #: What it is, as messages name it: ``gradient hook on input 0, call 1``.
    what: str
    #: The value: a tensor (compared as outputs are, or exactly), a count, or another plain value.
    value: Any
    #: Seen in the backward (a finding at ``backward``), else in the forward.
    backward: bool = False
    #: Compared bit for bit (``torch.get_rng_state()``), where the backend draws random numbers as
    #: eager does (``optests._check._running._draws_as_eager``) or eager's call draws none.
    random_state: bool = False


@dataclass(frozen=True)
class Refusal:
    """One step a pattern took beside the call, and what it raised ("": nothing)."""

    #: What the step did, as messages name it: ``out[0].mul_(2)``.
    step: str
    #: The error's type, "" if it raised none. Only the type is compared: messages differ.
    error: str
    #: A step of the backward (a finding at ``backward``), else of the forward.
    backward: bool = False
    #: A step autograd must take for any op (a backward with tangents of any layout): eager's
    #: error is a finding whatever the compiled call does.
    must_succeed: bool = False
    #: The error as messages name it (``RuntimeError: Unsupported memory format. ...``); not compared.
    message: str = field(default="", compare=False)


def attempt(called: Called, step: str, action: Callable[[], Any], *, backward: bool = False, must_succeed: bool = False) -> Any:
    """Run ``action``, recording in ``called`` whether it raised (and what); its result, or None."""
    try:
        result = action()
    except Exception as e:
        called.refused.append(Refusal(step, type(e).__name__, backward, must_succeed, error_line(e)))
        return None
    called.refused.append(Refusal(step, "", backward, must_succeed))
    return result


class CallPattern(Protocol):
    """How a function of the call's tensors is called and its outputs turned into what is
    compared. The check (:func:`optests._check._check_once`) calls :meth:`call`, then, where it
    checks gradients, :meth:`gradients` on what :meth:`call` returned: for eager, for the
    compiled function, and for the float64 reference, each on its own fresh inputs. Two methods,
    not one: a forward that raises and a backward that raises are different findings, and
    whether gradients are checked (``check_gradients="auto"``) depends on eager's outputs."""

    def call(self, fn: Callable[[list[torch.Tensor]], Any], inputs: list[torch.Tensor]) -> Called:
        """``fn`` called on ``inputs``, and what the call made. ``fn`` is eager or compiled and
        takes the list of the call's tensors; the compiled one traces on its first call, so a
        pattern that calls it in a mode (``no_grad``) traces it in that mode. The check runs this
        under a fixed RNG seed, the same for eager and compiled."""
        ...

    def gradients(self, called: Called, inputs: list[torch.Tensor]) -> tuple[torch.Tensor | None, ...]:
        """The gradients compared (``None``: unused), from what :meth:`call` made, w.r.t.
        ``inputs`` (those that require grad). An error is a finding (a ``backward`` one for the
        compiled call; eager's makes the sample not applicable), except :class:`Unsupported`."""
        ...


#: A pattern may also change what is compiled (and called eagerly in its place): a method of this
#: name, ``body(fn) -> fn'``, given the call as a function of its tensors, returns the function
#: the backend compiles and eager calls (``func-2``: a body that applies ``torch.func.grad``;
#: ``checkpoint-1``: one that checkpoints the call). The check looks it up with
#: ``getattr(pattern, BODY, None)``: a pattern without it compiles the call itself.
BODY = "body"

#: A pattern that changes the inputs between the forward and the backward (``inplace-between``)
#: has an attribute of this name: the pattern of the same call without the change. Where eager's
#: backward refuses the change and the compiled one goes through, its gradients must be eager's
#: under it; where eager's accepts and the compiled one's version check refuses, the derived sample
#: is not applicable (loud, no stale value used). ``getattr(pattern, UNCHANGED, None)``.
UNCHANGED = "unchanged"

#: A pattern whose backward calls the function again (``checkpoint``) has this attribute true: a
#: call that changes an input in place is then not applicable, since a recomputed call must have
#: no side effects. ``getattr(pattern, RECOMPUTES, False)``.
RECOMPUTES = "recomputes"

#: A pattern whose eager call may meet a limit of its own, not a precondition of the call, has an
#: attribute of this name: a compiled regular expression of what eager then raises (``func-2`` and
#: ``func-3``: a kernel ``torch.func`` refuses in eager's body). Where eager's refusal matches, the
#: derived sample is not applicable whatever compiled code does; a compiled call that refuses so
#: where eager goes through stays a finding. ``getattr(pattern, EAGER_LIMITS, None)``.
EAGER_LIMITS = "eager_limits"
