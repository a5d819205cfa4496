"""TorchScript export shared by the training modules: script, freeze (BatchNorm folds into the
convolutions, dropout disappears) and check the frozen module against the eager one."""

from typing import Sequence


def freeze_checked(model, inputs: Sequence, name: str, atol: float = 1e-5):
    """torch.jit.freeze(torch.jit.script(model)) of a model in eval mode, after checking that it
    gives the eager outputs (every tensor of a tuple) on `inputs`."""
    import torch
    with torch.no_grad():
        eager = model(*inputs)
        scripted = torch.jit.freeze(torch.jit.script(model))
        exported = scripted(*inputs)
    eager = eager if isinstance(eager, tuple) else (eager,)
    exported = exported if isinstance(exported, tuple) else (exported,)
    for a, b in zip(eager, exported):
        if a.shape != b.shape or not torch.allclose(a, b, atol=atol):
            raise RuntimeError(f"{name}: TorchScript output differs from eager")
    return scripted
