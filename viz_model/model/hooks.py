"""Hook points, and the per-call, per-thread context that records and changes activations.

Every interesting tensor in the GPT passes through an identity `HookPoint` named by its attribute
path (`blocks.0.attn.hook_pattern`). A HookPoint does nothing unless a `HookContext` is active in the
current context (a `contextvars.ContextVar`, so each thread and each Streamlit session sees only its
own). Nothing is ever registered on the module: one cached model can serve many sessions at once.

A hook function is called as `fn(activation, hook=hook_point)`, as TransformerLens calls it, and
returns a tensor to replace the activation or None to keep it. `hook.name` is the hook's name and
`hook.layer()` its block. It may edit the activation in place, as TransformerLens tutorials do: that
changes this call's tensors, never the model's weights, but also any recording of the same tensor
made earlier in the call (`blocks.0.hook_resid_post` is `blocks.1.hook_resid_pre`), as it would in
TransformerLens; return a new tensor to leave those alone. A head ablation from a TransformerLens
tutorial runs as it is:

    >>> from viz_model.model.config import GPTConfig
    >>> from viz_model.model.gpt import GPT
    >>> model = GPT(GPTConfig(vocab_size=23, n_ctx=16, d_model=32, n_layer=2, n_head=4)).eval()
    >>> ids = torch.tensor([3, 7, 1, 3, 7])
    >>> def ablate_head_2(z, hook):  # z: (B, T, H, E)
    ...     z[:, :, 2, :] = 0.0
    ...     return z
    >>> logits = model.run_with_hooks(ids, fwd_hooks=[("blocks.1.attn.hook_z", ablate_head_2)])
    >>> with model.intervene(ablate_heads(1, [2])):  # the same ablation, ready-made
    ...     torch.allclose(model(ids), logits)
    True

Where a hook name goes, a predicate may go instead (`lambda name: name.endswith("hook_z")`), as in
TransformerLens; the model expands it to the names it accepts before the call.

Contexts nest: an inner context runs after the outer one, so `run_with_cache` inside
`model.intervene(...)` records the intervened activations.

Not here: the cache object (cache.py) and the named interventions' arithmetic beyond ablation/patching.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Protocol

import torch
from torch import nn
from torch.nn.modules import module as _torch_module


class HookFn(Protocol):
    """fn(activation, hook=hook_point) -> new activation, or None to keep it."""

    def __call__(self, activation: torch.Tensor, hook: HookPoint) -> torch.Tensor | None: ...


# A hook's name, or a predicate on names standing for every name it accepts.
NameOrFilter = str | Callable[[str], bool]

_ACTIVE: ContextVar[HookContext | None] = ContextVar("viz_model_hook_context", default=None)


class HookPoint(nn.Module):
    """An identity layer that lets the active HookContext see and replace what passes through."""

    def __init__(self) -> None:
        super().__init__()
        self.name = ""  # set by the model to the attribute path once the tree is built

    # Called ~100 times per forward: skip nn.Module.__call__'s machinery unless someone has put
    # torch's own hooks on this point (register_forward_hook, register_forward_pre_hook, or a
    # global one), which then run as on any module, around our HookContext's functions.
    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        if self._forward_hooks or self._forward_pre_hooks or _global_torch_hooks():
            return super().__call__(x)
        return self.forward(x)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        ctx = _ACTIVE.get()
        return x if ctx is None else ctx.apply(self, x)

    def layer(self) -> int:
        """The block this hook is in: 1 for `blocks.1.attn.hook_z` (TransformerLens's helper)."""
        parts = self.name.split(".")
        if len(parts) < 3 or parts[0] != "blocks":
            raise ValueError(f"{self.name!r} is not inside a block")
        return int(parts[1])


def _global_torch_hooks() -> bool:
    """Whether torch.nn.modules.module.register_module_forward_hook (or _pre_hook) is in use."""
    return bool(_torch_module._global_forward_hooks or _torch_module._global_forward_pre_hooks)


@dataclass
class HookContext:
    """What one call records (`record`, names or None for none) and the functions it applies."""

    fns: dict[str, list[HookFn]] = field(default_factory=dict)
    record: frozenset[str] = frozenset()
    store: dict[str, torch.Tensor] = field(default_factory=dict)
    parent: HookContext | None = None

    def wants(self, name: str) -> bool:
        """True when this context (or an outer one) records or changes `name`."""
        if name in self.record or name in self.fns:
            return True
        return self.parent is not None and self.parent.wants(name)

    def apply(self, hook: HookPoint, x: torch.Tensor) -> torch.Tensor:
        """Run the outer contexts, then this one's functions on `x`, then record the result."""
        if self.parent is not None:
            x = self.parent.apply(hook, x)
        for fn in self.fns.get(hook.name, ()):
            out = fn(x, hook=hook)
            if out is not None:
                x = out
        if hook.name in self.record:
            self.store[hook.name] = x.detach()
        return x


def active_context() -> HookContext | None:
    """The HookContext of the current thread/task, if any."""
    return _ACTIVE.get()


def wants(name: str) -> bool:
    """True when the current context records or changes the hook `name`."""
    ctx = _ACTIVE.get()
    return ctx is not None and ctx.wants(name)


@contextmanager
def hook_context(
    fns: dict[str, list[HookFn]] | None = None, record: Iterable[str] = ()
) -> Iterator[HookContext]:
    """Activate a HookContext (nested inside any active one) for the duration of the block."""
    ctx = HookContext(fns=dict(fns or {}), record=frozenset(record), parent=_ACTIVE.get())
    token = _ACTIVE.set(ctx)
    try:
        yield ctx
    finally:
        _ACTIVE.reset(token)


def select(names: Sequence[str], which: NameOrFilter | Iterable[str] | None) -> list[str]:
    """The names `which` picks, in forward order: all for None, one for a string, those a
    predicate accepts, or a list as given (a KeyError names the first one not in `names`).

        >>> select(["hook_embed", "blocks.0.attn.hook_z"], lambda n: n.endswith("hook_z"))
        ['blocks.0.attn.hook_z']
    """
    if which is None:
        return list(names)
    if callable(which):
        return [n for n in names if which(n)]
    chosen = [which] if isinstance(which, str) else list(which)
    known = set(names)
    for name in chosen:
        if name not in known:
            raise KeyError(
                f"this model has no hook {name!r}; see model.hook_names() for the "
                f"{len(known)} it has"
            )
    return chosen


def expand(
    pairs: Iterable[tuple[NameOrFilter, HookFn]], names: Sequence[str]
) -> list[tuple[str, HookFn]]:
    """(name or predicate, fn) pairs -> (name, fn) pairs over `names`, a predicate giving one pair
    per name it accepts; an unknown name is a KeyError."""
    return [(name, fn) for which, fn in pairs for name in select(names, which)]


# ---- interventions: each returns (hook name, fn) pairs for hook_context ----------------------


def ablate_heads(
    layer: int, heads: Iterable[int], how: str = "zero", means: torch.Tensor | None = None
) -> list[tuple[str, HookFn]]:
    """Zero- or mean-ablate heads of one layer by replacing their rows of hook_z.

    "mean" replaces a head's z with its mean over the prompt's positions, or with `means`
    (H x d_head, e.g. a corpus mean) when given.
    """
    heads = sorted(set(heads))
    if how not in ("zero", "mean"):
        raise ValueError(f"ablation must be 'zero' or 'mean', got {how!r}")

    def fn(z: torch.Tensor, hook: HookPoint) -> torch.Tensor:  # z: (B, T, H, d_head)
        z = z.clone()
        for h in heads:
            if how == "zero":
                z[:, :, h, :] = 0.0
            elif means is not None:
                z[:, :, h, :] = means[h].to(z)
            else:
                z[:, :, h, :] = z[:, :, h, :].mean(dim=1, keepdim=True)
        return z

    return [(f"blocks.{layer}.attn.hook_z", fn)]


def patch(
    name: str, value: torch.Tensor, positions: Iterable[int] | None = None
) -> list[tuple[str, HookFn]]:
    """Replace activation `name` with `value` (all of it, or only the given positions).

    `value` has the activation's shape with or without the batch dimension; it is broadcast over
    the batch. Positions index the token axis (axis 1 for T-first activations, axis -1/-2 is not
    guessed: patterns are patched whole).
    """
    pos = None if positions is None else list(positions)

    def fn(x: torch.Tensor, hook: HookPoint) -> torch.Tensor:
        v = value.to(x)
        if v.dim() == x.dim() - 1:
            v = v.unsqueeze(0)
        if pos is None:
            return v.expand_as(x).clone()
        out = x.clone()
        out[:, pos] = v.expand_as(x)[:, pos]
        return out

    return [(name, fn)]


def custom(name: str, fn: HookFn) -> list[tuple[str, HookFn]]:
    """Run any function on hook `name`: fn(activation, hook) -> new activation or None."""
    return [(name, fn)]


def group(pairs: Iterable[tuple[str, HookFn]]) -> dict[str, list[HookFn]]:
    """Collect (name, fn) pairs into the name -> [fn, ...] map a HookContext takes."""
    out: dict[str, list[HookFn]] = {}
    for name, fn in pairs:
        out.setdefault(name, []).append(fn)
    return out
