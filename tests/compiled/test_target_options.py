"""numba's compiler options compared at C speed (dispatchlab.compiled.target_options): the
same values, in the same order, as numba's own definition, whatever options are set."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st
from numba.core import targetconfig
from numba.core.compiler import Flags

import dispatchlab.compiled  # noqa: F401  (installs the patch)
from dispatchlab.compiled.target_options import _values

BOOL_OPTIONS = sorted(name for name, option in Flags.options.items()
                      if isinstance(option.default, bool))


def numba_values(config: targetconfig.TargetConfig) -> dict[str, object]:
    """numba's definition of ``TargetConfig.values``."""
    return {name: getattr(config, name) for name in config.options}


def test_the_patch_is_installed() -> None:
    assert targetconfig.TargetConfig.values is _values
    assert len(BOOL_OPTIONS) >= 10


@settings(max_examples=200, deadline=None)
@given(st.dictionaries(st.sampled_from(BOOL_OPTIONS), st.booleans()))
def test_values_are_numba_s_in_numba_s_order(chosen: dict[str, bool]) -> None:
    flags = Flags()
    for name, value in chosen.items():
        setattr(flags, name, value)
    values = flags.values()
    assert values == numba_values(flags)
    assert list(values) == list(flags.options)
    twin = Flags(copy_from=flags)
    assert twin == flags and hash(twin) == hash(flags)
    if chosen:
        name = next(iter(chosen))
        setattr(twin, name, not chosen[name])
        assert twin != flags


def test_a_config_copied_from_another_kind_holds_only_its_own_options() -> None:
    class Other(targetconfig.TargetConfig):
        not_a_flag = targetconfig.Option(type=bool, default=False, doc="another option")

    other = Other()
    other.not_a_flag = True
    flags = Flags(copy_from=other)
    assert "not_a_flag" not in flags.values()
    assert flags.values() == numba_values(flags) == Flags().values()
