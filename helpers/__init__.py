"""Helpers for the course "Attention, step by step".

attention  the math, numpy only
examples   the worked examples from data/
plots      matplotlib figures
exercises  exercises that check themselves: check / hint / solution
"""
