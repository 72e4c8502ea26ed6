"""Theory: pure functions of the model and policy parameters (docs/model.md)."""
