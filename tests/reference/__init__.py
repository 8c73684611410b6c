"""Slow, obviously-correct pure-Python implementations written from the source designs (the
README's recipe table names them). They import no ``graphrecall`` module: plain rows and
numbers in, plain lists and dicts out."""
