"""tomllib on Python >= 3.11, the identical `tomli` package on 3.10."""

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib  # type: ignore[no-redef]

__all__ = ["tomllib"]
