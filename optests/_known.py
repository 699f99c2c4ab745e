"""The PyTorch bugs optests knows, one declaration each (torch-free): what a failure must show to
be an instance of one (:class:`KnownBug`; :mod:`optests._causes` matches failures to them), its
standalone repro in ``findings/``, the upstream issue, and the torch releases it was checked on.

Each entry's ``name`` is the stem of its repro (``findings/NAME.py``); this catalog is the
machine-readable form of ``findings/README.md``'s table, and a new finding needs a row there, its
script and outputs, and an entry here. ``tests/test_known.py`` checks them against each other, and
against the registry and the committed sweep records: a failure the registry puts down to
``findings/X.py`` has cause X, and one of cause X is put down to X (or is not expected at all).
Write an entry's conditions from the records it must match; an entry for some ops goes before
those for any op. Bump :data:`CATALOG_VERSION` as its comment says: results record the names, and
the version says which catalog named them.
"""

from __future__ import annotations

import dataclasses
import functools
import re
from collections.abc import Iterable
from dataclasses import dataclass

from ._findings import Stage


@dataclass(frozen=True)
class KnownBug:
    """One PyTorch bug that optests knows, with what a failure must show to be an instance of it.

    Every condition given must hold; one left at its default holds for any failure.
    """

    #: The stem of its repro in ``findings/`` (``findings/NAME.py``): the cause's name.
    name: str
    #: What goes wrong, one line (what ``optests report`` titles it with).
    what: str
    #: A regular expression searched in the failure's message (without its bracketed context).
    message: str
    #: The stages it fails at.
    stages: frozenset[Stage]
    #: The transform and pattern families it shows under (``""``: the sample as made); None: any.
    families: frozenset[str] | None = None
    #: The op ids it is known for; None: any op (a bug of the compile path, not of one op).
    ops: frozenset[str] | None = None
    #: The backends it shows under; None: any.
    backends: frozenset[str] | None = None
    #: The torch releases (``major.minor``) its repro was run on and reproduced.
    releases: tuple[str, ...] = ()
    #: The first release where it no longer reproduces; "" if none we ran.
    fixed_in: str = ""
    #: The upstream issue or pull request (``pytorch/pytorch#181606``); "" if none is filed.
    upstream: str = ""

    @property
    def finding(self) -> str:
        return f"findings/{self.name}.py"

    @functools.cached_property
    def pattern(self) -> re.Pattern[str]:
        return re.compile(self.message, re.DOTALL)


#: The catalog's version (results and reports name it beside a known cause). Bump it when an entry
#: is added, removed, renamed, or made to match other failures (its stages, families, ops, backends
#: or message); not for a change of its text (``what``), releases or upstream issue alone.
CATALOG_VERSION = 33

_BOTH = ("2.13", "2.15")
_FIXED = ("2.13",)

# what the strides, shape and dtype findings of a fake kernel say (one output, or output N)
_TRACED_STRIDES = r"^traced out(\[\d+\])?\.stride\(\)="
# ... and what a sequence says where a later call's compiled output has other strides than eager's:
# under the backends that run the decompositions, the strides the decomposition (often the fake
# kernel itself) gives; under others, it would be a stale graph, which these entries must not claim
_COMPILED_STRIDES = r"^call \d+ [^\n]*: compiled out(\[\d+\])?\.stride\(\)="
_DECOMPOSING = ("aot_eager_decomp_partition", "inductor")
_EXPAND = r"expand: the requested shape has too few dimensions"
_OUT_VALUES = r"^kwargs\['out'\] after the call="

_M, _T, _F, _B = Stage.METADATA, Stage.TRACE, Stage.FORWARD, Stage.BACKWARD


def _bug(
    name: str,
    what: str,
    message: str,
    stages: Iterable[Stage],
    families: Iterable[str] | None = None,
    ops: Iterable[str] | None = None,
    backends: Iterable[str] | None = None,
    releases: tuple[str, ...] = _BOTH,
    fixed_in: str = "",
    upstream: str = "",
) -> KnownBug:
    """One entry, its sets given as any iterable."""
    return KnownBug(
        name,
        what,
        message,
        frozenset(stages),
        None if families is None else frozenset(families),
        None if ops is None else frozenset(ops),
        None if backends is None else frozenset(backends),
        releases,
        fixed_in,
        upstream,
    )


#: An entry met by the ``sequence`` pattern under ``inductor`` alone: :func:`_bug` with ``ops=``.
_in_inductor_sequences = functools.partial(_bug, stages={Stage.SEQUENCE}, families={"sequence"}, backends={"inductor"})


def _and_in_sequences(bug: KnownBug) -> tuple[KnownBug, KnownBug]:
    """A fake kernel's strides finding, and the same met by a sequence: a later call's compiled
    output with those strides, under a backend that runs the decomposition (the fake kernel, or
    the decomposition it is), never under one that does not (there it would be a stale graph)."""
    return bug, dataclasses.replace(
        bug,
        message=_COMPILED_STRIDES,
        stages=frozenset({Stage.SEQUENCE}),
        families=frozenset({"sequence"}),
        backends=frozenset(_DECOMPOSING),
    )


#: Every known bug; the first that matches a failure is its cause: the narrower come first (one
#: op's kernel before a bug of the compile path that any op, a user's too, may show).
KNOWN: tuple[KnownBug, ...] = (
    # -- one op's (or a few ops') kernels: fake kernels that predict other metadata, eager kernels
    *_and_in_sequences(
        _bug(
            "max_unpool2d_channels_last_strides",
            "max_unpool2d's fake kernel predicts a contiguous output for a channels_last input",
            _TRACED_STRIDES,
            {_M},
            ops={"nn.functional.max_unpool2d", "nn.functional.max_unpool2d.grad"},
            releases=_FIXED,
            fixed_in="2.15",
        )
    ),
    *_and_in_sequences(
        _bug(
            "batch_norm_transposed_strides",
            "batch_norm's fake kernel predicts the input's memory order for a dense, non-contiguous input; the CPU kernel returns a contiguous output",
            _TRACED_STRIDES,
            {_M},
            {"transposed"},
            {"nn.functional.batch_norm", "native_batch_norm", "_native_batch_norm_legit", "_batch_norm_with_update"},
        )
    ),
    _bug(
        "channel_shuffle_identity_aliases_input",
        "channel_shuffle with groups 1 or the number of channels: under the decomposition the result is a view of the input, where eager's is a new tensor",
        r"compiled out aliases=\[args\[0\]\], but expected \[\]",
        {Stage.SEQUENCE},
        {"sequence"},
        {"nn.functional.channel_shuffle"},
        _DECOMPOSING,
        upstream="pytorch/pytorch#61645",
    ),
    _bug(
        "view_copy_decomposition_transposed_input",
        "view_copy of a dense input stored transposed: eager returns a contiguous copy, the decomposition calls view, which refuses it or keeps its memory order",
        r"Cannot view a tensor with shape [^\n]* as a tensor with shape|" + _COMPILED_STRIDES,
        {Stage.SEQUENCE},
        {"sequence"},
        {"view_copy"},
        _DECOMPOSING,
    ),
    _bug(
        "dynamo_pending_unbacked_symbols",
        "Dynamo refuses combinations with r >= 2 (2.13 only) and tensor_split by a tensor of indices along a dim of size 0: their fake kernels make unbacked sizes the outputs do not hold",
        r"PendingUnbackedSymbolNotFound",
        {Stage.SEQUENCE, _T},
        ops={"combinations", "tensor_split"},
    ),
    _bug(
        "while_loop_unbacked_carried_strides",
        "while_loop refuses a contiguous carried tensor whose dims are marked unbacked: its fake strides (u1*u2, u2, 1) and a new tensor's of its shape (Max(1, u1)*Max(1, u2), ...) differ as expressions",
        r"mark_unbacked[^\n]*Expected body_fn_output and carried_inputs to have same metadata",
        {Stage.SEQUENCE},
        {"sequence"},
        {"while_loop.simple", "while_loop_stack_output.simple"},
    ),
    _bug(
        "invoke_quant_backward_partition",
        "torch.compile of the invoke_quant higher-order op on an input that requires grad: the partitioner can neither save nor recompute its output",
        r"AOT Autograd failed to partition the joint forward-backward graph",
        {Stage.SEQUENCE, _T, _B},
        ops={"invoke_quant.simple"},
        releases=_FIXED,
        fixed_in="2.15",
    ),
    _bug(
        "func_grad_prod_reduction_data_dependent",
        "torch.func.grad of index_reduce or scatter_reduce with reduce='prod', traced, reads a value of the input, where the traced autograd backward of the same does not",
        r"DataDependentOutputException: aten\._local_scalar_dense|Could not guard on data-dependent expression",
        {_T},
        {"func"},
        {"index_reduce.prod", "scatter_reduce.prod"},
    ),
    _bug(
        "constant_pad_nd_symbolic_pad_strides",
        "constant_pad_nd of a transposed input by a pad that depends on a size, traced with dynamic shapes: the fake kernel predicts a contiguous output where eager keeps the input's memory order (the FFT ops' backward narrows so)",
        r"^traced out(\[\d+\])*\.stride\(\)=",
        {_M},
        {"func"},
        {"fft.fft", "fft.ifft", "fft.rfft", "fft.ihfft"},
    ),
    _bug(
        "func_grad_dropout_dynamic_numel",
        "torch.func.grad of dropout in training mode (dropout, alpha_dropout, feature_alpha_dropout; multi_head_attention_forward's dropout) traced with dynamic shapes asks a symbolic tensor for numel()",
        r"Cannot call numel\(\) on tensor with symbolic sizes/strides",
        {_T},
        {"func"},
        {
            "nn.functional.dropout",
            "nn.functional.alpha_dropout",
            "nn.functional.feature_alpha_dropout.with_train",
            "nn.functional.multi_head_attention_forward",
        },
    ),
    _bug(
        "decomposition_output_strides",
        "the decompositions of stack (one tensor), put and grid_sample (channels_last) give other output strides than eager's CPU kernels",
        _COMPILED_STRIDES,
        {Stage.SEQUENCE},
        {"sequence"},
        {"stack", "put", "nn.functional.grid_sample", "grid_sampler_2d"},
        _DECOMPOSING,
        upstream="pytorch/pytorch#198364",
    ),
    _bug(
        "binary_broadcast_transposed_strides",
        "a binary elementwise op with one operand broadcast and the other transposed: the fake kernel predicts other output strides than the CPU kernel",
        _TRACED_STRIDES,
        {_M},
        {"transposed"},
        {
            "logaddexp",
            "ldexp",
            "copysign",
            "div.floor_rounding",
            "floor_divide",
            "heaviside",
            "logical_and",
            "logical_or",
            "logical_xor",
        },
    ),
    _bug(
        "pad_channels_last_strides",
        "F.pad in reflect and replicate mode: the fake kernel predicts a contiguous output for a channels_last input",
        _TRACED_STRIDES,
        {_M},
        {"transposed"},
        {"nn.functional.pad.reflect", "nn.functional.pad.replicate"},
    ),
    *_and_in_sequences(
        _bug(
            "channel_shuffle_channels_last_strides",
            "channel_shuffle's fake kernel predicts a contiguous output for a channels_last input",
            _TRACED_STRIDES,
            {_M},
            {"transposed"},
            {"nn.functional.channel_shuffle"},
        )
    ),
    *_and_in_sequences(
        _bug(
            "dropout_backward_normal_transposed_strides",
            "native_dropout_backward's and normal's fake kernels predict other output strides than the CPU kernels for transposed inputs",
            _TRACED_STRIDES,
            {_M},
            {"transposed"},
            {"native_dropout_backward", "normal"},
        )
    ),
    _bug(
        "multilabel_margin_loss_1d_fake_shape",
        "multilabel_margin_loss's fake kernel gives a 1-D input with reduction='none' shape [1], the CPU kernel a 0-d tensor",
        r"^traced out\.shape=\[1\], but expected \[\]",
        {_M},
        ops={"nn.MultiLabelMarginLoss.train", "nn.MultiLabelMarginLoss.eval", "nn.functional.multilabel_margin_loss"},
    ),
    _bug(
        "map_noncontiguous_dynamic_error",
        "the map (and cond) higher-order op, traced with dynamic shapes over non-dense inputs that require grad, fails an internal assertion",
        r"vr must not be None for symbol|unhashable type: non-nested SymInt",
        {_T},
        {"noncontiguous"},
        {"map.simple", "map.nested", "map.triple_nested", "cond.simple"},
    ),
    _bug(
        "aot_autocast_pinv_dtype",
        "linalg.pinv under CPU autocast returns bfloat16 in eager but float32 traced",
        r"^traced out\.dtype=|^compiled backward=no error, but expected raised",
        {_M, _B},
        {"autocast"},
        {"linalg.pinv", "linalg.pinv.hermitian"},
    ),
    _bug(
        "aot_lstm_autocast_onednn_dtype",
        "nn.LSTM under CPU autocast: what eager returns depends on the CPU's oneDNN, and AOTAutograd fails on a CPU with bfloat16 kernels",
        r"tensors_saved_with_vc_check|could not create a primitive descriptor|^traced out(\[\d+\])?\.dtype=",
        {_M, _T, _B, Stage.EAGER},
        {"autocast"},
        {"nn.LSTM.train", "nn.LSTM.eval"},
    ),
    _bug(
        "aot_polygamma_inplace_not_functionalized",
        "Tensor.polygamma_(n) cannot be traced: functionalization calls ATen's own in-place op a custom operator",
        r"custom \(non-ATen\) operator whose output has alias annotations",
        {_T},
        {"inplace"},
        {f"polygamma.polygamma_n_{n}" for n in range(5)},
    ),
    _bug(
        "addbmm_inplace_resizes_self",
        "eager's x.addbmm_(b1, b2) resizes a broadcast x to the result's shape; AOTAutograd cannot trace it",
        _EXPAND,
        {_T},
        {"inplace"},
        {"addbmm"},
        upstream="pytorch/pytorch#56233",
    ),
    _bug(
        "native_group_norm_mean_rstd_grad_dropped",
        "eager native_group_norm drops the gradient of its mean and rstd outputs; the compiled function gives the true gradient",
        r"^grad of .* \(out \d+ alone\)=tensor\(",
        {_B},
        {"backward"},
        {"native_group_norm"},
        releases=_FIXED,
        fixed_in="2.15",
    ),
    _bug(
        "max_pool3d_backward_channels_last_grad",
        "eager max_pool3d's CPU backward on an unbatched input rejects a gradient in channels_last format",
        r"^eager backward with random values in another layout as grad_outputs=raised",
        {_B},
        {"tangents"},
        {"nn.functional.max_pool3d"},
    ),
    _bug(
        "two_tensor_conj_bit_hfftn",
        "a wrapper subclass (TwoTensor) loses a conjugation in eager: torch.conj sets the conjugate bit on the inner tensors, not on the wrapper",
        r"=max abs diff ",
        {_F, _B},
        {"subclass"},
        {"fft.hfftn", "fft.hfft2", "polar", "linalg.eig", "linalg.eigvals"},
        upstream="pytorch/pytorch#130646",
    ),
    _bug(
        "aot_subclass_dynamic_output_rebuild",
        "with dynamic shapes and a TwoTensor input, AOTAutograd's generated wrapper fails to rebuild the subclass outputs",
        r"tuple index out of range|argument 'strides' must be tuple of ints|could not match output layout with optional SymInt outputs",
        {_T, _B},
        {"subclass"},
        {"sgn", "split"},
        upstream="pytorch/pytorch#185296",
    ),
    _bug(
        "put_0d_backward_data_dependent",
        "put and take on 0-d tensors under inductor's decompositions read a value of the index while tracing the backward",
        r"GuardOnDataDependentSymNode|DataDependentOutputException: aten\._local_scalar_dense",
        {_T, _B, Stage.SEQUENCE},
        ops={"put", "take"},
        backends={"aot_eager_decomp_partition", "inductor"},
        releases=_FIXED,
        fixed_in="2.15",
    ),
    _bug(
        "checkpoint_hop_caching_mode_rule",
        "a compiled function that checkpoints a region calling cond, map or invoke_quant_packed fails to compile under every torch.compile backend: these higher-order ops register no rule for checkpoint's caching dispatch mode",
        r"There was no rule registered for HigherOrderOperator \w+ and mode <torch\.utils\.checkpoint\._CachingTorchDispatchMode",
        {_T},
        {"checkpoint"},
        {"cond.simple", "map.simple", "map.nested", "map.triple_nested", "invoke_quant_packed.simple", "invoke_quant.simple"},
    ),
    _bug(
        "func_grad_over_nested_compile_region",
        "torch.func.grad inside a compiled function over a nested_compile_region (invoke_subgraph) or invoke_quant fails to compile under every torch.compile backend with an internal assertion",
        r"Expected FakeTensor, got <class 'torch\.Tensor'>",
        {_T},
        {"func"},
        {"invoke_subgraph.simple", "invoke_quant.simple"},
    ),
    _in_inductor_sequences(
        "inductor_softmax_backward_data_mixed_dtype_gradient",
        "_softmax_backward_data on float64 tensors with input_dtype float32 (eager computes in float64): inductor's forward is eager's, its gradients are wrong",
        r"^call \d+ \(dtypes float64[^)\n]* after dtypes float32[^)\n]*\): grad of args\[\d+\]=max abs diff",
        ops={"_softmax_backward_data"},
    ),
    _bug(
        "inductor_avg_pool_ceil_mode_backward_divisor",
        "avg_pool with ceil_mode and count_include_pad: inductor's backward divides a last window that overhangs the padded input by the full kernel size, so its gradient is too small",
        r"grad of args\[0\]=max abs diff",
        {_B, Stage.SEQUENCE},
        None,
        {"nn.functional.avg_pool1d", "nn.functional.avg_pool2d", "nn.functional.avg_pool3d"},
        backends={"inductor"},
        upstream="pytorch/pytorch#198119",
    ),
    _bug(
        "inductor_var_mean_empty_mean_zero",
        "var_mean and std_mean of an empty tensor: inductor's mean is 0 where eager's is NaN",
        r"out\[1\]=[^\n]*NaN mismatches",
        {_F, Stage.SEQUENCE},
        None,
        {"var_mean", "var_mean.unbiased", "std_mean", "std_mean.unbiased"},
        backends={"inductor"},
    ),
    _in_inductor_sequences(
        "inductor_dynamic_float_stale_cached_graph",
        "a function of a Python float compiled by inductor with grad, called again with other values of the float (automatically dynamic): it keeps using an old value, which inductor's compile caches baked into the artifact they return for every value (hardtanh's forward, renorm's gradient)",
        r"\): (out|grad of args\[0\])=max abs diff",
        ops={"renorm", "nn.functional.hardtanh"},
        releases=_FIXED,
        fixed_in="2.15",
        upstream="pytorch/pytorch#194976",
    ),
    _in_inductor_sequences(
        "inductor_invoke_quant_dynamic_backward_lowering",
        "inductor compiles invoke_quant's forward with symbolic sizes, but its lowering of the backward fails ('tuple' object has no attribute 'realize'): dynamic=True, or the automatically dynamic recompile",
        r"'tuple' object has no attribute 'realize'",
        ops={"invoke_quant.simple", "invoke_quant_packed.simple"},
    ),
    _in_inductor_sequences(
        "inductor_max_pool3d_transposed_input_indices",
        "max_pool3d compiled by inductor on an input with its last two dims swapped in memory: eager's values, but other indices, and the gradient goes to the wrong elements",
        r"\): (out\[1\]|grad of args\[0\])=max abs diff",
        ops={"nn.functional.max_pool3d"},
        releases=_FIXED,
        fixed_in="2.15",
        upstream="pytorch/pytorch#197434",
    ),
    _in_inductor_sequences(
        "inductor_compile_cache_lu_square_backward",
        "linalg.lu compiled by inductor, called on a tall matrix, a batch of wide ones, then a batch of tall ones: the last backward is the square case's and raises; with inductor's compile caches off it is eager's",
        r"linalg\.solve_triangular: A must be batches of square matrices",
        ops={"linalg.lu"},
    ),
    _bug(
        "masked_select_fake_broadcast_bound",
        "masked_select's fake kernel bounds the number of selected elements by x.numel(), not by the numel of x broadcast against mask: compiled, a call with x smaller than mask fails its runtime assertion (u0 <= x.numel())",
        r"(RuntimeError: |expression )u\d+ <= \d+",
        {Stage.SEQUENCE},
        {"sequence"},
        {"masked_select"},
    ),
    _in_inductor_sequences(
        "inductor_conv2d_dynamic_backward_invalid_ranges",
        "conv2d with stride 2 and padding 2 compiled by inductor with symbolic sizes (dynamic=True, or the automatically dynamic recompile): the backward's lowering fails (ValueRangeError: Invalid ranges [0:-1])",
        r"ValueRangeError: Invalid ranges \[0:-1\]",
        ops={"nn.functional.conv2d"},
        releases=_FIXED,
        fixed_in="2.15",
    ),
    _bug(
        "inductor_fork_after_compile_hangs",
        "a process that compiled C++ with inductor forks: the child's first inductor compile waits forever on the parent's compile thread pool, which torch's at-fork handler does not reset (optests' forked children reset it, so no check of theirs meets it)",
        r"took more than",
        {Stage.TIMEOUT},
        ops=(),
        backends={"inductor"},
    ),
    _bug(
        "inductor_floor_divide_rounding",
        "inductor computes floating floor division as floor(a / b): a quotient that rounds to an integer is one too high, an underflowing one -0 where eager has -1, an infinite dividend inf where eager has NaN",
        r"^out=",
        {_F, Stage.RANDOMIZED},
        {"special"},
        {"floor_divide", "div.floor_rounding"},
        backends={"inductor"},
        upstream="pytorch/pytorch#197895",
    ),
    _bug(
        "inductor_negative_index_no_error",
        "index_select, index_add and index_copy compiled by inductor wrap a negative index where eager raises",
        r"^compiled call=no error, but expected raised \w+: index",
        {_F},
        {"special"},
        {
            "index_select",
            "index_add",
            "index_copy",
            "index_reduce.mean",
            "index_reduce.prod",
            "index_reduce.amax",
            "index_reduce.amin",
        },
        backends={"aot_eager_decomp_partition", "inductor"},
        upstream="pytorch/pytorch#169779",
    ),
    _bug(
        "decomposition_drops_input_checks",
        "inductor's decompositions drop eager's input checks: bernoulli's p outside [0, 1], binary_cross_entropy's input outside [0, 1], max_unpool's negative index",
        r"^compiled call=no error, but expected raised RuntimeError: (Expected p_in|all elements of (input|target) should be between|Found an invalid max index)",
        {_F},
        {"special"},
        {
            "bernoulli",
            "nn.functional.binary_cross_entropy",
            *(f"nn.functional.max_unpool{n}d{grad}" for n in (1, 2, 3) for grad in ("", ".grad")),
        },
        backends={"aot_eager_decomp_partition", "inductor"},
        upstream="pytorch/pytorch#193757",
    ),
    _bug(
        "aot_multilabel_margin_loss_padded_target",
        "multilabel_margin_loss's decomposition, applied under every backend, counts the target slots after the first -1 as class 0",
        r"^out=",
        {_F, Stage.RANDOMIZED, _B},
        {"special"},
        {"nn.functional.multilabel_margin_loss"},
        releases=_FIXED,
        fixed_in="2.15",
        upstream="pytorch/pytorch#141017",
    ),
    _bug(
        "segment_reduce_offsets_out_of_bounds",
        "eager segment_reduce reads past its data for an offset out of range, and crashes for one far out",
        r"died with signal SIGSEGV|^out=",
        {Stage.CRASH, _F, Stage.RANDOMIZED},
        {"special"},
        {"_segment_reduce.offsets", "_segment_reduce.lengths"},
    ),
    _bug(
        "batch_norm_one_value_per_channel_zero_division",
        "native_batch_norm in training mode on one value per channel: eager gives a NaN running variance, tracing divides by n - 1 = 0",
        r"fake tensor call: got ZeroDivisionError|ZeroDivisionError: float division by zero",
        {_T, Stage.SEQUENCE},
        ops={"native_batch_norm", "_native_batch_norm_legit", "_batch_norm_with_update"},
    ),
    _bug(
        "vmap_upsample_dynamic_sizes",
        "torch.func.vmap of an upsampling op (F.interpolate) traced with dynamic shapes: its batching rule asks a symbolic tensor for sizes()",
        r"Cannot call sizes\(\) on tensor with symbolic sizes/strides",
        {_T},
        {"func"},
        {
            *(f"nn.functional.interpolate.{mode}" for mode in ("nearest", "linear", "bilinear", "bicubic", "trilinear")),
            "nn.functional.upsample_nearest",
            "nn.functional.upsample_bilinear",
            "_upsample_bilinear2d_aa",
        },
    ),
    _bug(
        "vmap_batching_rules_symbolic_sizes",
        "torch.func.vmap of native_group_norm, slice_scatter, select_scatter, unsafe_chunk, torch.gradient, kron, take_along_dim, linalg.multi_dot, _unsafe_masked_index or _unsafe_masked_index_put_accumulate traced with dynamic shapes: the batching rule asks a symbolic tensor for sizes() or numel()",
        r"Cannot call (sizes|numel)\(\) on tensor with symbolic sizes/strides",
        {_T},
        {"func"},
        {
            "native_group_norm",
            "nn.functional.group_norm",
            "slice_scatter",
            "select_scatter",
            "unsafe_chunk",
            "gradient",
            "kron",
            "take_along_dim",
            "linalg.multi_dot",
            "_unsafe_masked_index",
            "_unsafe_masked_index_put_accumulate",
        },
    ),
    _bug(
        "aot_group_norm_empty_backward",
        "group_norm of an input with a size-0 dim, compiled with a backward: the decomposition of its backward divides by the group's 0 elements",
        r"ZeroDivisionError: float division by zero",
        {_T, _B, Stage.SEQUENCE},
        ops={"nn.functional.group_norm", "native_group_norm"},
        releases=_FIXED,
        fixed_in="2.15",
    ),
    _bug(
        "loss_backward_decomposition_empty_mean",
        "mse_loss, huber_loss and smooth_l1_loss with reduction='mean' of empty inputs, compiled with a backward: the decompositions of their backwards divide by numel(), 0, in Python",
        r"ZeroDivisionError: float division by zero",
        {_T, _B, Stage.SEQUENCE},
        ops={"nn.functional.mse_loss", "nn.functional.huber_loss", "nn.functional.smooth_l1_loss"},
    ),
    _bug(
        "batch_norm_eval_empty_backward_crash",
        "eager CPU: the backward of native_batch_norm in evaluation mode on an input with no elements (a batch or channels of 0) dies with SIGFPE",
        r"died with signal SIGFPE",
        {Stage.CRASH},
        ops={"native_batch_norm", "_native_batch_norm_legit"},
    ),
    _bug(
        "embedding_bag_empty_offsets_backward_crash",
        "eager CPU: embedding_bag with empty offsets (no bags) and a non-empty input dies with SIGSEGV (sum, mean: the backward with a dense cotangent; max: the forward)",
        r"died with signal SIGSEGV",
        {Stage.CRASH},
        ops={"nn.functional.embedding_bag"},
    ),
    _bug(
        "adaptive_max_pool3d_unbatched_channels_last",
        "adaptive_max_pool3d of an unbatched channels_last input, output size the input's, under the decompositions: the compiled code refuses the layout eager takes",
        r"Unsupported memory format\. Supports only ChannelsLast3d, Contiguous",
        {Stage.SEQUENCE, _F, _T},
        ops={"nn.functional.adaptive_max_pool3d"},
        backends={"aot_eager_decomp_partition"},
    ),
    # -- out= variants of one op
    _bug(
        "aot_lu_out_dynamic_internal_assert",
        "torch.lu with out= and dynamic shapes fails an internal assert on its first compiled call",
        r"INTERNAL ASSERT FAILED at \S*python_arg_parser|dispatch_on_subclass called with NO overloaded args",
        {_T},
        {"out"},
        {"lu"},
        releases=_FIXED,
        fixed_in="2.15",
    ),
    _bug(
        "aot_svd_out_noncontiguous",
        "torch.svd with a non-contiguous out= V, compiled: V is resized, written with other values, or the call fails",
        r"^compiled out\[\d+\]\.shape=|^kwargs\['out'\]\[\d+\] after the call=|setStorage: .* out of bounds",
        {_M, Stage.MUTATION, _T},
        {"out"},
        {"svd"},
        releases=_FIXED,
        fixed_in="2.15",
    ),
    _bug(
        "aot_matrix_rank_out_not_written",
        "linalg.matrix_rank(A, out=out) compiles to a call that never writes out",
        r"^traced mutation of kwargs\['out'\]=none",
        {Stage.MUTATION},
        {"out"},
        {"linalg.matrix_rank", "linalg.matrix_rank.hermitian"},
    ),
    _bug(
        "aot_duplicated_mutated_input_effect_token",
        "one tensor passed for two arguments, one of them mutated, and an op traced with an effect token: the compiled call passes no token",
        r"tangents_token|^args\[\d+\] mutated=no, but expected yes|^args\[\d+\] after the call=",
        {_F, Stage.MUTATION},
        {"out"},
        {"linalg.solve", "linalg.cholesky", "linalg.matrix_power", "linalg.inv"},
    ),
    _bug(
        "matmul_vector_out_restrided",
        "eager matmul with a 1-D first operand (and linear of a 1-D input) restrides a non-dense out= and writes past it",
        r"^traced out\.stride\(\)=",
        {_M},
        {"out"},
        {"matmul", "nn.functional.linear"},
    ),
    _bug(
        "aot_batch_norm_legit_out_expand",
        "AOTAutograd cannot trace aten._native_batch_norm_legit.out, even with out= tensors of the right size",
        _EXPAND,
        {_T},
        {"out"},
        {"_native_batch_norm_legit"},
    ),
    _bug(
        "narrow_copy_out_noncontiguous",
        "eager's CPU narrow_copy writes wrong values into an out= that is not dense",
        _OUT_VALUES,
        {Stage.MUTATION},
        {"out"},
        {"narrow_copy"},
        upstream="pytorch/pytorch#84577",
    ),
    _bug(
        "avg_pool3d_out_noncontiguous",
        "eager's CPU avg_pool3d writes wrong values into an out= that is not dense",
        _OUT_VALUES,
        {Stage.MUTATION},
        {"out"},
        {"nn.functional.avg_pool3d"},
        upstream="pytorch/pytorch#84577",
    ),
    _bug(
        "gelu_out_noncontiguous_unwritten",
        "eager's CPU gelu never writes an out= that is not dense and returns it unwritten",
        r"^kwargs\['out'\] mutated=yes, but expected no",
        {Stage.MUTATION},
        {"out"},
        {"nn.functional.gelu"},
    ),
    _bug(
        "randn_out_dynamic_shapes",
        "randn with out= cannot be traced with dynamic shapes: its composite kernel resizes the symbolic out= with concrete sizes",
        r"Cannot call storage_offset\(\) on tensor with symbolic sizes/strides",
        {_T},
        {"out"},
        {"randn"},
    ),
    # -- the compile path: any op, a user's custom op too
    _bug(
        "vmap_zero_dim_times_symint",
        "under torch.func.vmap traced with dynamic shapes, a SymInt reaches _to_copy's decomposition, which refuses it (a per-example 0-d tensor times or divided by a size)",
        r"x must be Tensor or scalar, got SymInt",
        {_T},
        {"func"},
    ),
    _bug(
        "inductor_saved_input_view_version_counter",
        "inductor rebuilds a view of an input that the forward saves or returns (mm's saved transposes, split's outputs) as a new tensor without the input's version counter: where eager's backward refuses an input changed in place after the forward, inductor's runs on the new values",
        r"^compiled backward=no error, and gradients other than those of the values before the change, but expected raised RuntimeError: (one of the variables needed for gradient computation has been modified by an inplace operation|Output \d+ of \w+ is a view and its base)",
        {_B},
        {"inplace-between"},
        # any op: under inductor alone, not the op, the check is lost (a gradient that differs by
        # rounding alone after the change would be named so too: the pattern compares with assert_close)
        None,
        backends={"inductor"},
        upstream="pytorch/pytorch#197887",
    ),
    _bug(
        "aot_double_backward_silently_dropped",
        "a double backward through a compiled function whose backward saves no input returns None for the second-order gradient, silently",
        # its forms: None where eager's is a tensor (zeros too), and no error where eager refuses to
        # differentiate the backward (an ATen backward without a derivative, a custom op's backward
        # that calls an op without an autograd formula, a once_differentiable backward)
        r"\(second order\)=None, but expected|^compiled backward=no error, but expected raised RuntimeError: "
        r"(derivative for \S+ is not implemented|Trying to backward through \S+ but no autograd formula was registered"
        r"|trying to differentiate twice)",
        {_B},
        {"backward"},
        upstream="pytorch/pytorch#181606",
    ),
    _bug(
        "aot_unused_output_grad_zeros",
        "the gradient of one output of a multi-output compiled function w.r.t. an input that output does not use is zeros where eager's is None",
        r"\(out \d+ alone\)=tensor\(.*, but expected None$",
        {_B},
        {"backward"},
        upstream="pytorch/pytorch#131794",
    ),
    _bug(
        "aot_out_resize",
        "an out= tensor the op must resize is traced at its old shape, and the compiled call fails or writes nothing",
        r"^traced out(\[\d+\])?\.shape=|Attempted to resize a view tensor to a larger size|setStorage: .* out of bounds"
        r"|isIntList\(\) INTERNAL ASSERT FAILED|expand: the requested shape has too few dimensions|expand: attempting to expand"
        r"|Dimension out of range|Attempted to set the storage of a tensor on device|^kwargs\['out'\]\[\d+\] mutated=no",
        {_M, _T, Stage.MUTATION, Stage.RANDOMIZED},
        {"out"},
    ),
    _bug(
        "aot_inference_mode_view_requires_grad",
        "a view output of an input that requires grad, compiled and first called under inference_mode, comes back detached",
        r"^(call \d+ \(under torch\.inference_mode\(\).*?\): )?compiled out(\[\d+\])?\.requires_grad=False, but expected True",
        {_M, Stage.SEQUENCE},
        {"grad-mode", "sequence"},
    ),
    _bug(
        "aot_mincut_saves_mutated_input",
        "the min-cut partitioner saves an input the function mutates in place, not its old value, so the compiled backward raises",
        r"modified by an inplace operation",
        {_B},
        {"inplace"},
        releases=_FIXED,
        fixed_in="2.15",
        upstream="pytorch/pytorch#185497",
    ),
    _bug(
        "aot_inplace_view_output_not_mutable",
        "an output that eager returns as a plain tensor, made by an in-place view op on an intermediate, comes back as a view that refuses in-place ops",
        r"is a view and is being modified inplace|^out\.\w+\(.*\)=raised RuntimeError, but expected no error",
        {_F},
        {"outputs"},
        upstream="pytorch/pytorch#90507",
    ),
    _bug(
        "aot_autocast_backward_lower_precision",
        "a function compiled and called under autocast with the backward outside it runs its backward in lower precision than eager",
        r"^grad of .*=max abs diff ",
        {_B, Stage.RANDOMIZED},
        {"autocast"},
        upstream="pytorch/pytorch#153044",
    ),
    _bug(
        "aot_duplicated_mutated_input_index_error",
        "one tensor passed for two arguments, one of them mutated: AOTAutograd's input deduplication raises IndexError",
        r"raised IndexError: list index out of range",
        {_T, _B},
        {"duplicated"},
    ),
    _bug(
        "aot_subclass_dynamic_invalid_output_node",
        "a tensor subclass input with dynamic shapes fails the joint trace: 'Node ... was invalid, but is output'",
        r"was invalid, but is output",
        {_T, _B},
        {"subclass"},
        upstream="pytorch/pytorch#164186",
    ),
    _bug(
        "aot_hook_called_with_none_grad",
        "a gradient hook on an input that gets no gradient is called once with None after a compiled call, never in eager",
        r"^observed=\[.*gradient the hook on input \d+ saw",
        {_B},
        {"hooks"},
        backends={"aot_eager", "aot_eager_decomp_partition", "inductor"},
    ),
    _bug(
        "dynamo_no_grad_after_grad_requires_grad",
        "torch.compile under aot_eager_decomp_partition (any op) or inductor (a 0-d tensor to complex): called with grad, then under no_grad(), the output still requires grad",
        r"^call \d+ \(under torch\.no_grad\(\) after grad enabled\): compiled out(\[\d+\])?\.requires_grad=True, but expected False",
        {Stage.SEQUENCE},
        {"sequence"},
        backends={"aot_eager_decomp_partition", "inductor"},
    ),
    _bug(
        "dynamo_symint_for_int_list_argument",
        "an int passed for an op's int[N] argument, changed between calls: Dynamo makes it a SymInt, and the op's schema refuses it",
        r"Expected a value of type 'List\[int\]' for argument '\w+' but instead found type 'SymInt'",
        {_T, Stage.SEQUENCE},
        upstream="pytorch/pytorch#125638",
    ),
)
