"""Compatibility knowledge, read from the TOML files in matrices/ (data, never Python tables)."""

# The platform keys the framework matrices (and the planners' target_platform) use.
PLATFORMS = ("linux_x86_64", "linux_aarch64", "windows_amd64", "macos_arm64", "macos_x86_64")
