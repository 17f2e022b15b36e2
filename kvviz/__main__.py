import sys

from .cli import entry

if __name__ == "__main__":  # spawned worker processes import this module again
    sys.exit(entry())
