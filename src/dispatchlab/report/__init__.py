"""Figures (``plots``) and the self-contained HTML report (``html``) of stored experiments."""

#: the committed store the Reproductions page is judged from (here, where the command line
#: reads it without loading the page's modules)
REPRODUCTIONS_STORE = "results/reproductions/store.sqlite"
