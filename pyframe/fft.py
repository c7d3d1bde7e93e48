"""pyframe.fft: torch.fft's transforms whose input and output are both real (pyframe has no complex dtypes):
``irfft``/``irfft2``/``irfftn`` and ``hfft``/``hfft2``/``hfftn`` of a real input (which torch takes as a complex
tensor with zero imaginary part), ``fftshift``/``ifftshift`` and ``fftfreq``/``rfftfreq``; the transforms are
computed in ``core_c/src/fft.c`` and differentiable. ``fft``, ``rfft``, ``ifft`` and the other complex-valued
transforms are not there."""

from pyframe.ops.fft import fftfreq, fftshift, hfft, hfft2, hfftn, ifftshift, irfft, irfft2, irfftn, rfftfreq

__all__ = ["irfft", "irfft2", "irfftn", "hfft", "hfft2", "hfftn", "fftshift", "ifftshift", "fftfreq", "rfftfreq"]
