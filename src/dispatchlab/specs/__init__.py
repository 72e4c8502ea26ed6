"""What a user writes down, validated: one run (:mod:`~dispatchlab.specs.run`: SystemSpec,
PolicySpec, RunSpec), an experiment's grid (:mod:`~dispatchlab.specs.experiment`) and its
figures (:mod:`~dispatchlab.specs.figure`). TOML files are read as data: nothing in them
is imported or executed."""
