"""Helpers for the course "Attention, step by step".

Arrows run one way (a module imports only those below it; no circles):

explorers/   the widgets: base.py (Explorer and its static form), one module per explorer
             (setup, dk, mask, heads, tiling, real_model)
exercises/   exercises that check themselves: feedback.py (reading an answer), base.py
             (base classes, ChoiceExercise, exercise()), one module per topic, diagnose.py
             (diagnose(fn): what is wrong in a learner's own attention function)
plots        matplotlib figures and the explorers' HTML heatmaps
examples     the worked examples from data/
real_model   the trained model all-MiniLM-L6-v2 run in numpy on helpers.attention
training     one attention layer's forward and backward pass, the gradient check, Adam (notebook 09)
tasks        notebook 09's two tiny tasks
saturation   random queries and keys, and the softmax's Jacobian (notebook 03)
hull, depth  notebook 07's convex hull and rank collapse
course       the course map
environment  the set-up check of the start-here notebook
attention    the mechanism of notebooks 01-05, numpy only
positions    the sinusoidal positional encoding
tiling       notebook 08: the online softmax, tiled attention, the KV cache
inputs       the input checks every module shares
paths        where the course folder (data/, notebooks/) is, in place or in a class image
"""
