"""`python -m jobq_cli` is the `jobq` command."""

from . import main

if __name__ == "__main__":
    main()
