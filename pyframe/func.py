"""Same as torch.func, by reverse-mode autograd: ``grad``, ``grad_and_value``, ``vjp``, ``jvp``, ``jacrev``,
``jacfwd``, ``hessian``, ``vmap`` and ``functional_call``.

The transforms compose (``vmap(grad(f))``, ``jacrev(jacrev(f))``): each runs its function on fresh leaves, and
inside another transform keeps the graph (``create_graph``) so the outer one can differentiate through it; the
outermost returns results detached, as torch's. ``vmap`` runs the function once per slice of the batch dims and
stacks the results (the same numbers as torch's batched kernels; no speed-up). ``jacfwd`` and ``jvp`` compute by
reverse mode (the double-vjp trick), which gives the same values.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable

from pyframe import _grad_mode
from pyframe.autograd import functional as _af
from pyframe.autograd import grad as _grad
from pyframe.tensor import Tensor

__all__ = [
    "grad", "grad_and_value", "vjp", "jvp", "jacrev", "jacfwd", "hessian", "vmap", "functional_call",
    "stack_module_state",
]  # fmt: skip

_depth = [0]  # how many transforms are running: inside one, results keep their graph


@contextlib.contextmanager
def _level():
    _depth[0] += 1
    try:
        with _grad_mode.enable_grad():
            yield _depth[0] > 1
    finally:
        _depth[0] -= 1


def _leaf(t, nested: bool):
    if not isinstance(t, Tensor):
        return t
    return t.view_as(t) if nested and t.requires_grad else t.detach().requires_grad_()


def _map(fn, tree):
    if isinstance(tree, (tuple, list)):
        return type(tree)(_map(fn, t) for t in tree)
    if isinstance(tree, dict):
        return {k: _map(fn, v) for k, v in tree.items()}
    return fn(tree)


def _flat(tree) -> list:
    if isinstance(tree, (tuple, list)):
        return [x for t in tree for x in _flat(t)]
    if isinstance(tree, dict):
        return [x for v in tree.values() for x in _flat(v)]
    return [tree]


def _unflat(tree, items: list):
    it = iter(items)
    return _map(lambda _: next(it), tree)


def _finish(tree, nested: bool):
    return tree if nested else _map(lambda t: t.detach() if isinstance(t, Tensor) else t, tree)


def grad_and_value(func: Callable, argnums=0, has_aux: bool = False) -> Callable:
    """Same as torch.func.grad_and_value: ``(gradient of func's scalar output by args[argnums], value)``."""

    def wrapper(*args, **kwargs):
        with _level() as nested:
            nums = argnums if isinstance(argnums, tuple) else (argnums,)
            args = list(args)
            for n in nums:
                args[n] = _map(lambda t: _leaf(t, nested), args[n])
            out = func(*args, **kwargs)
            aux = None
            if has_aux:
                if not (isinstance(out, tuple) and len(out) == 2):
                    raise RuntimeError("grad_and_value(f)(*args): output of function f should be a tuple: "
                                       "(output, aux) if has_aux is True")  # fmt: skip
                out, aux = out
            if not isinstance(out, Tensor) or out.numel() != 1:
                raise RuntimeError("grad_and_value(f)(*args): Expected f(*args) to return a scalar Tensor, got "
                                   f"{type(out).__name__}")  # fmt: skip
            wrt = [args[n] for n in nums]
            leaves = [t for t in _flat(wrt) if isinstance(t, Tensor)]
            got = _grad(out, leaves, retain_graph=True, create_graph=nested, allow_unused=True) if out.requires_grad \
                else [None] * len(leaves)  # fmt: skip
            got = [t.new_zeros(t.shape) if g is None else g for t, g in zip(leaves, got, strict=True)]
            grads = _unflat(wrt, got)
            grads = grads[0] if not isinstance(argnums, tuple) else tuple(grads)
            value = (out, aux) if has_aux else out
            return _finish(grads, nested), _finish(value, nested)

    return wrapper


def grad(func: Callable, argnums=0, has_aux: bool = False) -> Callable:
    """Same as torch.func.grad: the gradient of func's scalar output with respect to ``args[argnums]``."""
    gv = grad_and_value(func, argnums, has_aux)

    def wrapper(*args, **kwargs):
        g, value = gv(*args, **kwargs)
        return (g, value[1]) if has_aux else g

    return wrapper


def vjp(func: Callable, *primals, has_aux: bool = False):
    """Same as torch.func.vjp: ``(func(*primals), vjp_fn)``; ``vjp_fn(cotangents)`` gives one gradient per primal."""
    with _level() as nested:
        leaves = _map(lambda t: _leaf(t, nested), primals)
        out = func(*leaves)
        aux = None
        if has_aux:
            out, aux = out
    flat_in = [t for t in _flat(leaves) if isinstance(t, Tensor)]

    def vjp_fn(cotangents):
        outs, cots = _flat(out), _flat(cotangents)
        with _level() as inner:
            pairs = [(o, c) for o, c in zip(outs, cots, strict=True) if o.requires_grad]
            keep = inner or nested
            got = [None] * len(flat_in)
            if pairs:
                got = _grad([p[0] for p in pairs], flat_in, [p[1] for p in pairs], retain_graph=True,
                            create_graph=keep, allow_unused=True)  # fmt: skip
            got = [t.new_zeros(t.shape) if g is None else g for t, g in zip(flat_in, got, strict=True)]
            return _finish(tuple(_unflat(list(leaves), got)), inner or nested)

    result = _finish(out, nested)
    return (result, vjp_fn, _finish(aux, nested)) if has_aux else (result, vjp_fn)


def jvp(func: Callable, primals, tangents, *, strict: bool = False, has_aux: bool = False):
    """Same as torch.func.jvp: ``(func(*primals), J @ tangents)``; primals and tangents are tuples of tensors or
    of pytrees of them (tuples, lists, dicts) of the same structure."""
    if has_aux:
        raise NotImplementedError("pyframe.func.jvp: has_aux=True is not supported")
    if not isinstance(primals, tuple) or not isinstance(tangents, tuple):
        raise RuntimeError("jvp(f, primals, tangents): Expected primals and tangents to be tuples")
    flat_p, flat_t = _flat(primals), _flat(tangents)
    if len(flat_p) != len(flat_t):
        raise RuntimeError("jvp(f, primals, tangents): Expected primals and tangents to have the same structure")
    with _level() as nested:
        out, res = _af.jvp(lambda *xs: func(*_unflat(primals, list(xs))), tuple(flat_p), tuple(flat_t),
                           create_graph=nested)  # fmt: skip
    return out, res


def jacrev(func: Callable, argnums=0, *, has_aux: bool = False, chunk_size=None) -> Callable:
    """Same as torch.func.jacrev: the jacobian of func by ``args[argnums]``, of shape ``out.shape + arg.shape``."""
    if has_aux:
        raise NotImplementedError("pyframe.func.jacrev: has_aux=True is not supported")

    def wrapper(*args):
        nums = argnums if isinstance(argnums, tuple) else (argnums,)
        wrt = [args[n] for n in nums]  # each a tensor or a pytree of them
        leaves = _flat(wrt)

        def f(*flat):
            full = list(args)
            for n, w in zip(nums, _unflat(wrt, list(flat)), strict=True):
                full[n] = w
            return func(*full)

        with _level() as nested:
            jac = _af.jacobian(f, tuple(leaves), create_graph=nested)

        def per_arg(per_leaf):  # one jacobian per leaf -> the argnums' structure
            trees = _unflat(wrt, list(per_leaf))
            return tuple(trees) if isinstance(argnums, tuple) else trees[0]

        if isinstance(jac, tuple) and jac and isinstance(jac[0], tuple):  # several outputs
            return tuple(per_arg(j) for j in jac)
        return per_arg(jac)

    return wrapper


jacfwd = jacrev


def hessian(func: Callable, argnums=0) -> Callable:
    """Same as torch.func.hessian: ``jacfwd(jacrev(func))``."""
    return jacfwd(jacrev(func, argnums), argnums)


def vmap(func: Callable, in_dims=0, out_dims=0, randomness: str = "error", *, chunk_size=None) -> Callable:
    """Same as torch.func.vmap: func over the batch dim ``in_dims`` of each argument (tensors, or tuples, lists
    and dicts of them), results (the same kinds) stacked at ``out_dims``; an argument with in_dim None is passed
    whole to every call."""
    from pyframe.ops import stack

    def wrapper(*args):
        dims = in_dims if isinstance(in_dims, (tuple, list)) else (in_dims,) * len(args)
        if len(dims) != len(args):
            raise ValueError(f"vmap: in_dims has {len(dims)} entries for {len(args)} arguments")
        sizes = {t.shape[d] for a, d in zip(args, dims, strict=True) if d is not None
                 for t in _flat(a) if isinstance(t, Tensor)}  # fmt: skip
        if len(sizes) != 1:
            raise ValueError(f"vmap: expected one batch size over the mapped arguments, got {sorted(sizes)}")
        (n,) = sizes
        outs = []
        for i in range(n):
            call = [a if d is None else _map(lambda t, d=d, i=i: t.select(d, i) if isinstance(t, Tensor) else t, a)
                    for a, d in zip(args, dims, strict=True)]  # fmt: skip
            outs.append(func(*call))
        flats = [_flat(o) for o in outs]
        ods = out_dims if isinstance(out_dims, (tuple, list)) else (out_dims,) * len(flats[0])
        stacked = [stack([f[k] for f in flats], ods[k]) for k in range(len(flats[0]))]
        return _unflat(outs[0], stacked)

    return wrapper


def functional_call(module, parameter_and_buffer_dicts, args=None, kwargs=None, *, tie_weights: bool = True,
                    strict: bool = False):  # fmt: skip
    """Same as torch.func.functional_call: ``module(*args, **kwargs)`` with its parameters and buffers replaced
    by the given tensors (by dotted name) for the call, and put back after."""
    dicts = parameter_and_buffer_dicts
    values = {}
    for d in dicts if isinstance(dicts, (tuple, list)) else (dicts,):
        for k, v in d.items():
            if k in values:
                raise ValueError(f"{k} appeared in multiple dictionaries; behavior of functional call is ambiguous")
            values[k] = v
    known = dict(module.named_parameters()) | dict(module.named_buffers())
    if strict and set(values) != set(known):
        raise RuntimeError(f"functional_call: missing or unexpected keys: {sorted(set(known) ^ set(values))}")
    saved = []
    try:
        for name, value in values.items():
            owner_name, _, attr = name.rpartition(".")
            owner = module.get_submodule(owner_name) if owner_name else module
            store = owner._parameters if attr in owner._parameters else owner._buffers
            if attr not in store:
                raise AttributeError(f"functional_call: {type(module).__name__} has no parameter or buffer {name!r}")
            saved.append((store, attr, store[attr]))
            store[attr] = value
        args = () if args is None else args if isinstance(args, tuple) else (args,)
        return module(*args, **(kwargs or {}))
    finally:
        for store, attr, old in reversed(saved):
            store[attr] = old


def stack_module_state(models) -> tuple[dict, dict]:
    """Same as torch.func.stack_module_state: the parameters and the buffers of same-class ``models``, each name
    stacked along a new leading dim (one slice per model), for ``vmap`` over ``functional_call``. Stacked
    parameters are new leaves that require grad where the originals did; buffers are stacked as they are."""
    from pyframe.ops import stack

    models = list(models)
    if not models:
        raise RuntimeError("stack_module_state: Expected at least one model, got 0.")
    if len({m.training for m in models}) != 1:
        raise RuntimeError("stack_module_state: Expected all models to have the same training/eval mode.")
    if len({type(m) for m in models}) != 1:
        raise RuntimeError("stack_module_state: Expected all models to be of the same class.")

    def stacked(named):
        names = [n for n, _ in named(models[0])]
        per = [dict(named(m)) for m in models]
        for m, d in zip(models, per, strict=True):
            if list(d) != names:
                raise RuntimeError(f"stack_module_state: {type(m).__name__} models differ in their state names")
        return {n: stack([d[n].detach() for d in per]) for n in names}, per

    params, per = stacked(lambda m: m.named_parameters())
    for n, t in params.items():
        if per[0][n].requires_grad:
            t.requires_grad_()
    buffers, _ = stacked(lambda m: m.named_buffers())
    return params, buffers
