"""Graph passes: ``shape_prop.ShapeProp``."""
