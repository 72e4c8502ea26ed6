"""Exact answers for small systems: the stationary law of the slotted chain.

* :func:`dispatchlab.solvers.chain.solve` — a truncated sparse chain for small N, any law
  and policy that declares its dispatch law (:mod:`dispatchlab.solvers.rules`);
* :func:`dispatchlab.solvers.multilevel.solve_two_server` — two servers under JIQ / JBT-r
  with M = 1, when the plain chain is too large;
* :func:`dispatchlab.solvers.qbd.two_server_qbd` — two servers in heavy traffic: a QBD
  (level min(Q₁, Q₂), phase Q₁ − Q₂) solved by logarithmic reduction.

This package sits beside the theory: it never imports the policies nor the engine and
asks a policy object for its capability. The public entry point is the function
``dispatchlab.exact(system, policy, method=…)``, which validates, takes a policy's name and
chooses among these solvers.
"""
