"""CLI room: argument parsing, progress and exit codes. Holds no logic of its own."""
