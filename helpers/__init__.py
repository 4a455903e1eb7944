"""Helpers for the course "Attention, step by step".

attention    the math, numpy only
examples     the worked examples from data/
plots        matplotlib figures and the explorers' HTML heatmaps
saturation   random queries and keys, and the softmax's Jacobian (notebook 03)
widgets      the explorers: d_k and scaling, masks, number of heads
exercises    exercises that check themselves: check / hint / solution; exercise() makes a new one
diagnose     diagnose(fn): names what is wrong in a learner's own attention function
course       the course map
environment  the set-up check of the start-here notebook
paths        where the course folder (data/, notebooks/) is, in place or in a class image
real_model   the trained model all-MiniLM-L6-v2 run in numpy on helpers.attention
"""
