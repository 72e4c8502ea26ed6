"""Theory: pure functions of the model and policy parameters (THEORY.md §2–6)."""
