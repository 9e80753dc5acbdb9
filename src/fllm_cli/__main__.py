"""Allow ``python -m fllm_cli``."""

from fllm_cli.cli.app import main

if __name__ == "__main__":
    main()
