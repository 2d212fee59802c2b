"""One module per command; each exposes `register(app)`. Heavy imports stay inside the commands."""

COMMAND_MODULES = (
    "envdoctor.commands.check",
    "envdoctor.commands.install",
    "envdoctor.commands.matrix",
    "envdoctor.commands.smoke",
    "envdoctor.commands.explain",
    "envdoctor.commands.dockerfile",
    "envdoctor.commands.fleet",
)
