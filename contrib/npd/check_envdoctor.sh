#!/bin/bash
# node-problem-detector custom plugin: envdoctor's verdict on this node's GPU environment.
#
# Contract (custom plugin monitor): exit 0 = OK, 1 = problem (the condition becomes True),
# anything else = Unknown; stdout is the condition's message, cut by NPD at max_output_length (80).
# envdoctor's exit codes map onto it one to one: 0 healthy, 1 problem, 2 cannot judge.
#
#   ENVDOCTOR       the command (default: envdoctor)
#   ENVDOCTOR_ARGS  extra arguments, e.g. "--expect /etc/envdoctor/policy.toml"
#   ENVDOCTOR_ROOT  when NPD runs in a container with the host's / mounted elsewhere (e.g. /host)
ENVDOCTOR="${ENVDOCTOR:-envdoctor}"
ENVDOCTOR_ARGS="${ENVDOCTOR_ARGS:-}"

VERDICT=$(timeout -k 2 35 $ENVDOCTOR check --profile node --format oneline $ENVDOCTOR_ARGS 2>/dev/null)
RC=$?
VERDICT="${VERDICT%%$'\n'*}"
case "$RC" in
    0) echo "envdoctor: ok"; exit 0 ;;
    1) echo "${VERDICT:-problem found}" | cut -c1-80; exit 1 ;;
    124|137) echo "unknown: envdoctor timed out"; exit 2 ;;
    127) echo "unknown: envdoctor not found"; exit 2 ;;
    *) echo "${VERDICT:-unknown: envdoctor exit $RC}" | cut -c1-80; exit 2 ;;
esac
