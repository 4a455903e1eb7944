"""Helpers for the course "Attention, step by step".

attention  the math, numpy only
examples   the worked examples from data/
plots      matplotlib figures
saturation random queries and keys, and the softmax's Jacobian (notebook 03)
widgets    the explorers: d_k and scaling, masks, number of heads
"""
