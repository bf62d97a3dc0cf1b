"""`python -m flywheel ...` is the `flywheel` command."""

from flywheel.cli import main

if __name__ == "__main__":
    raise SystemExit(main())
