"""``Parameter``: a leaf tensor that a Module registers as trainable; ``Buffer``, one it registers as a buffer; their
uninitialized forms, which the lazy modules hold until their first forward. Same as torch.nn.parameter."""

from __future__ import annotations

import weakref

from pyframe.tensor import Tensor, _new

__all__ = [
    "Parameter", "UninitializedParameter", "is_lazy", "Buffer", "UninitializedBuffer", "UninitializedTensorMixin",
]  # fmt: skip


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
        return (_rebuild_parameter, (self.detach(), self.requires_grad), self.__dict__ or None)

    def __deepcopy__(self, memo):  # as torch's, the attributes a program set are not copied
        if id(self) in memo:
            return memo[id(self)]
        out = type(self)(self.detach().clone(), self.requires_grad)
        memo[id(self)] = out
        return out


def _rebuild_parameter(data: Tensor, requires_grad: bool) -> Parameter:
    return Parameter(data, requires_grad)


class Buffer(Tensor):
    """Same as torch.nn.Buffer: a tensor that a Module registers as a buffer when it is assigned as an attribute
    (``self.mask = nn.Buffer(t)``), persistent in ``state_dict`` unless ``persistent=False``. It shares ``data``'s
    memory, outside autograd, and keeps its ``requires_grad``."""

    __slots__ = ("persistent",)

    def __new__(cls, data: Tensor | None = None, *, persistent: bool = True):
        if data is None:
            from pyframe.ops.creation import empty

            data = empty(0)
        elif not isinstance(data, Tensor):
            raise TypeError(f"Buffer data must be a Tensor, got {type(data).__name__}")
        b = _new(data._storage, data._shape, data._strides, data._offset, data.dtype, cls)
        b.requires_grad = data.requires_grad
        b.persistent = bool(persistent)
        return b

    def __init__(self, data: Tensor | None = None, *, persistent: bool = True):
        pass  # everything happens in __new__

    def __reduce_ex__(self, protocol):
        return (_rebuild_buffer, (self.detach(), self.persistent))

    def __deepcopy__(self, memo):
        if id(self) not in memo:
            memo[id(self)] = type(self)(self.detach().clone(), persistent=self.persistent)
        return memo[id(self)]


def _rebuild_buffer(data: Tensor, persistent: bool) -> Buffer:
    return Buffer(data, persistent=persistent)


class UninitializedTensorMixin:
    """Same as torch.nn.parameter.UninitializedTensorMixin: what UninitializedParameter and UninitializedBuffer
    share. Such a tensor holds no data until ``materialize(shape)`` gives it memory (uninitialized values, as
    torch) and turns it into its ``cls_to_become``, keeping its identity."""

    __slots__ = ()
    cls_to_become: type = Tensor

    def materialize(self, shape, device=None, dtype=None) -> None:
        """Same as torch's: memory of ``shape`` (an int or a sequence of ints), and the class ``cls_to_become``."""
        from pyframe.ops.creation import empty

        shape = (shape,) if isinstance(shape, int) else tuple(shape)
        if not all(isinstance(s, int) and s >= 0 for s in shape):
            raise ValueError(f"materialize() takes a shape of non-negative ints, got {shape!r}")
        self.data = empty(shape, dtype=dtype if dtype is not None else self.dtype, device=device)
        self.__class__ = self.cls_to_become

    def __repr__(self) -> str:
        return f"<{type(self).__name__}>"


class UninitializedParameter(UninitializedTensorMixin, Parameter):
    """Same as torch.nn.UninitializedParameter: a parameter whose shape is not known yet (the lazy modules
    hold these until their first forward). It holds no data; ``materialize(shape)`` gives it memory and
    turns it into a plain Parameter, keeping its identity."""

    __slots__ = ()
    cls_to_become = Parameter

    def __new__(cls, requires_grad: bool = True, device=None, dtype=None):
        from pyframe.ops.creation import empty

        return Parameter.__new__(cls, empty(0, dtype=dtype, device=device), requires_grad)

    def __init__(self, requires_grad: bool = True, device=None, dtype=None) -> None:
        pass  # everything happens in __new__

    def __reduce_ex__(self, protocol):
        return (UninitializedParameter, (self.requires_grad, None, self.dtype))

    def __deepcopy__(self, memo):
        if id(self) not in memo:
            memo[id(self)] = UninitializedParameter(self.requires_grad, None, self.dtype)
        return memo[id(self)]


class UninitializedBuffer(UninitializedTensorMixin, Tensor):
    """Same as torch.nn.UninitializedBuffer: a buffer whose shape is not known yet (the lazy norms hold these
    until their first forward); ``materialize(shape)`` makes it a plain Tensor, keeping its identity."""

    __slots__ = ()
    cls_to_become = Tensor

    def __new__(cls, requires_grad: bool = False, device=None, dtype=None, persistent: bool = True):
        from pyframe.ops.creation import empty

        data = empty(0, dtype=dtype, device=device)
        b = _new(data._storage, data._shape, data._strides, data._offset, data.dtype, cls)
        b.requires_grad = requires_grad
        _PERSISTENT[id(b)] = bool(persistent)
        weakref.finalize(b, _PERSISTENT.pop, id(b), None)
        return b

    def __init__(self, requires_grad: bool = False, device=None, dtype=None, persistent: bool = True) -> None:
        pass  # everything happens in __new__

    @property
    def persistent(self) -> bool:
        """Whether a module registering this buffer keeps it in ``state_dict`` (torch's attribute)."""
        return _PERSISTENT.get(id(self), True)

    def __reduce_ex__(self, protocol):
        return (UninitializedBuffer, (self.requires_grad, None, self.dtype, self.persistent))

    def __deepcopy__(self, memo):
        if id(self) not in memo:
            memo[id(self)] = UninitializedBuffer(self.requires_grad, None, self.dtype, self.persistent)
        return memo[id(self)]


# an UninitializedBuffer's ``persistent`` flag, by id: it has Tensor's slots only, so that ``materialize`` can make
# it a plain Tensor in place; the entry goes when the tensor does
_PERSISTENT: dict[int, bool] = {}


def is_lazy(param) -> bool:
    """Same as torch.nn.parameter.is_lazy: whether ``param`` is still uninitialized."""
    return isinstance(param, UninitializedTensorMixin)
