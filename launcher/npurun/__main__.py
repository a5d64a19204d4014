"""``python -m npurun``: same as the ``npurun`` console script."""
from .cli import console_main

console_main()
