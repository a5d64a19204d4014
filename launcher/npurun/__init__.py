"""npurun: the npudist launcher, built on torch.distributed.run.

Packaged with npudist (pyproject.toml) so that `import npurun` resolves; the
launcher itself (the `npurun` console script, rank output, signals, cleanup)
is the launcher issue's work and is not implemented yet.
"""
