"""npurun: the npudist launcher, built on torch.distributed.run's elastic agent.

``npurun --nproc 8 train.py [args]`` starts 8 ranks on the local npus; see docs/launcher.md.
The console script is ``npurun.cli:console_main``.
"""
