"""``Parameter``: a leaf tensor that a Module registers as trainable. Same as torch.nn.Parameter."""

from __future__ import annotations

from pyframe.tensor import Tensor, _new


class Parameter(Tensor):
    """A tensor that is a Module parameter: sharing ``data``'s memory, a leaf, ``requires_grad``
    True unless told otherwise. Same as torch.nn.Parameter; ``Parameter()`` is an empty one."""

    __slots__ = ()

    def __new__(cls, data: Tensor | None = None, requires_grad: bool = True):
        if data is None:
            from pyframe.ops.creation import empty

            data = empty(0)
        elif not isinstance(data, Tensor):
            raise TypeError(f"Parameter data must be a Tensor, got {type(data).__name__}")
        if requires_grad and not data.dtype.is_floating_point:
            raise RuntimeError(
                f"Only Tensors of floating point dtype can require gradients, got {data.dtype.name}; "
                "pass requires_grad=False"
            )
        p = _new(data._storage, data._shape, data._strides, data._offset, data.dtype, cls)
        p.requires_grad = bool(requires_grad)
        return p

    def __init__(self, data: Tensor | None = None, requires_grad: bool = True):
        pass  # everything happens in __new__ (Tensor has no __init__ to call)

    def __repr__(self) -> str:
        return "Parameter containing:\n" + super().__repr__()

    def __reduce_ex__(self, protocol):
        return (_rebuild_parameter, (self.detach(), self.requires_grad))

    def __deepcopy__(self, memo):
        if id(self) in memo:
            return memo[id(self)]
        out = type(self)(self.detach().clone(), self.requires_grad)
        memo[id(self)] = out
        return out


def _rebuild_parameter(data: Tensor, requires_grad: bool) -> Parameter:
    return Parameter(data, requires_grad)


class UninitializedParameter(Parameter):
    """Same as torch.nn.UninitializedParameter: a parameter whose shape is not known yet (the lazy modules
    hold these until their first forward). It holds no data; ``materialize(shape)`` gives it memory and
    turns it into a plain Parameter, keeping its identity. Any other use raises a clear error."""

    __slots__ = ()
    cls_to_become = Parameter

    def __new__(cls, requires_grad: bool = True, device=None, dtype=None):
        from pyframe.ops.creation import empty

        return Parameter.__new__(cls, empty(0, dtype=dtype, device=device), requires_grad)

    def __init__(self, requires_grad: bool = True, device=None, dtype=None) -> None:
        pass  # everything happens in __new__

    def materialize(self, shape, device=None, dtype=None) -> None:
        """Give the parameter memory of ``shape`` (uninitialized values, as torch) and make it a Parameter."""
        from pyframe.ops.creation import empty

        shape = (shape,) if isinstance(shape, int) else tuple(shape)
        self.data = empty(shape, dtype=dtype if dtype is not None else self.dtype, device=device)
        self.__class__ = self.cls_to_become

    def __repr__(self) -> str:
        return "<UninitializedParameter>"

    def __reduce_ex__(self, protocol):
        return (UninitializedParameter, (self.requires_grad, None, self.dtype))

    def __deepcopy__(self, memo):
        if id(self) not in memo:
            memo[id(self)] = UninitializedParameter(self.requires_grad, None, self.dtype)
        return memo[id(self)]


def is_lazy(param) -> bool:
    """Same as torch.nn.parameter.is_lazy: whether ``param`` is still uninitialized."""
    return isinstance(param, UninitializedParameter)
