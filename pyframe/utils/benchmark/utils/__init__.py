"""The modules behind ``pyframe.utils.benchmark``: ``common``, ``timer``, ``compare`` (torch's layout)."""
