"""Helpers for the course "Attention, step by step".

attention  the math, numpy only
examples   the worked examples from data/
plots      matplotlib figures
real_model the trained model all-MiniLM-L6-v2 run in numpy on helpers.attention
"""
