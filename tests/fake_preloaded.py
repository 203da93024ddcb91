"""A module that only the null-preloading variant (tests/fake_variant.py) declares to preload:
whether a cell's process has it shows which fork-server branch the cell was forked from."""
