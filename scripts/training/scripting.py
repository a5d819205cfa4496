"""TorchScript export shared by the training modules: script, freeze (BatchNorm folds into the
convolutions, dropout disappears) and check the frozen module against the eager one."""

import time
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


class Optimisation:
    """The training loop's optimiser: AdamW under a one-cycle schedule (peak 3e-3 unless given,
    10% warm-up),
    one `update(loss)` per step, and a smoothed loss for the progress lines."""

    def __init__(self, model, steps: int, weight_decay: float, name: str, log, log_every: int,
                 peak: float = 3e-3):
        import torch
        self.optimiser = torch.optim.AdamW(model.parameters(), lr=2e-3, weight_decay=weight_decay)
        self.schedule = torch.optim.lr_scheduler.OneCycleLR(self.optimiser, max_lr=peak,
                                                            total_steps=steps, pct_start=0.1)
        self.steps, self.name, self.log, self.log_every = steps, name, log, log_every
        self.running = None
        self.started = time.monotonic()

    def update(self, step: int, loss) -> bool:
        """Backpropagates `loss` and steps; True (after logging) every `log_every` steps."""
        self.optimiser.zero_grad()
        loss.backward()
        self.optimiser.step()
        self.schedule.step()
        value = loss.item()
        self.running = value if self.running is None else 0.98 * self.running + 0.02 * value
        if step % self.log_every == 0 or step == self.steps - 1:
            self.log(f"{self.name}: step {step}/{self.steps} loss {self.running:.4f} "
                     f"({time.monotonic() - self.started:.0f} s)")
            return True
        return False


def module_cli(doc: str, model_id: str, train, evaluate, seed: int, extra=None) -> int:
    """The command line of a training module (`python3 -m training.<module>`): `train [--out
    DIR] [--seed N]` and `evaluate [--package DIR]`, defaults worker/packages; `extra(sub)` may
    add subcommands and returns a handler(args) for them."""
    import argparse
    import json
    import os
    from training import common
    packages = os.path.join(common.ROOT, "worker", "packages")
    parser = argparse.ArgumentParser(description=doc.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    t = sub.add_parser("train")
    t.add_argument("--out", default=packages)
    t.add_argument("--seed", type=int, default=seed)
    e = sub.add_parser("evaluate")
    e.add_argument("--package", default=os.path.join(packages, model_id))
    handle_extra = extra(sub) if extra else None
    args = parser.parse_args()
    if args.command == "train":
        print(train(args.out, args.seed))
    elif args.command == "evaluate":
        print(json.dumps(evaluate(args.package), indent=2, sort_keys=True))
    else:
        handle_extra(args)
    return 0


def card_head(model_id: str, description: str, task: str) -> list:
    """The first lines of a model card: title, the manifest's description, and the start of the
    field table (the task's row; the module adds its own rows)."""
    return [f"# {model_id}", "", description, "", "| field | value |", "|---|---|",
            f"| task | {task} |"]
