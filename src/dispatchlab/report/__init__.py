"""Figures (``plots``) and the self-contained HTML report (``html``) of stored experiments."""
