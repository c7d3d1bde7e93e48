"""torch.utils.model_zoo: the older name of ``hub.load_state_dict_from_url``, which model files still import."""

from __future__ import annotations

from pyframe.hub import load_state_dict_from_url as load_url

__all__ = ["load_url"]
