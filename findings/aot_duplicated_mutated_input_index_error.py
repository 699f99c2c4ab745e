"""AOTAutograd fails with IndexError when one tensor is passed for two arguments, one of them
is mutated, another input requires grad, and inference input mutations are kept in the graph
(keep_inference_input_mutations=True, as inductor compiles). Eager, and the same call with
keep_inference_input_mutations=False, are fine. The error comes from remove_dupe_metadata
(torch/_functorch/_aot_autograd/input_output_analysis.py), which indexes the deduplicated
inputs with runtime indices of the duplicated ones.

Found by optests' `duplicated` transform (nn.functional.batch_norm with running_var passed as
running_mean: backward stage, "IndexError: list index out of range").
Run: python findings/aot_duplicated_mutated_input_index_error.py
"""

import torch
from functorch.compile import aot_function, nop


def f(x: torch.Tensor, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    a.add_(1)
    b.mul_(2)
    return x * 2


x = torch.randn(3, requires_grad=True)
print("torch", torch.__version__)
a = torch.ones(3)
f(x, a, a)
print("eager                                             ", a)
for keep in (False, True):
    a = torch.ones(3)
    try:
        aot_function(f, nop, keep_inference_input_mutations=keep)(x, a, a)
        print(f"aot_function, keep_inference_input_mutations={keep!s:<5}", a)
    except IndexError as e:
        print(f"aot_function, keep_inference_input_mutations={keep!s:<5} IndexError: {e}")
