"""envdoctor: diagnose, install and smoke-test deep-learning frameworks on GPU machines."""

__version__ = "0.1.0"
