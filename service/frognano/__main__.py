"""`python -m frognano`: the same entry point as the `frognano` command."""

from frognano.cli.app import main

if __name__ == "__main__":
    main()
