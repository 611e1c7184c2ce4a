"""Allow ``python -m monitor`` as an alias of the ``bias-monitor`` console script."""

from monitor.cli.app import main

if __name__ == "__main__":
    main()
