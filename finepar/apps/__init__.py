"""The apps: each a semiring row operation plus init / step / converged (DESIGN.md §2)."""
