"""Every figure the chapters draw, with matplotlib: the general plots (``plot``: curves,
heatmaps, attention maps, training histories), one module of plots per chapter that needs its
own (``bahdanau``, ``decoder``, ``lm``, ``pretraining``, ``vit``), and the schematic diagrams
(``diagrams``).

``import companion`` does not import this package, nor ``matplotlib.pyplot``: ``companion``'s
plotting names (``from companion import plot_attention``) import it on first use. Figures read
the experiments' results; nothing below them imports a figure.
"""
