# The optests pytest plugin is registered through its `pytest11` entry point (pyproject.toml);
# this root conftest only keeps pytest from collecting the virtual environment.
collect_ignore = [".venv"]
