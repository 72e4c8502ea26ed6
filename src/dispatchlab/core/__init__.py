"""The bottom layer, imported by every other: the one bad-input error
(:mod:`~dispatchlab.core.errors`), typed converters of user input, file checks, the RAM
guard, process pools and the formatting of numbers. Imports nothing else of dispatchlab."""
