"""`python -m pgq_client` is the `jobq` command."""

from .cli import main

if __name__ == "__main__":
    main()
