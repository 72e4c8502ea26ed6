"""The compiled slot loop and the seam a policy implements for it: a
:class:`~dispatchlab.engine.interface.Kernel` of functions compiled with
:func:`~dispatchlab.engine.interface.choose_function` and
:func:`~dispatchlab.engine.interface.hook_function`."""
