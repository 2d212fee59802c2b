"""`envdoctor fleet` output: plain text for people (no colour needed), Markdown, JSON envdoctor.fleet/1."""

from __future__ import annotations

from envdoctor.fleet.aggregate import FleetView
from envdoctor.fleet.hostlist import fold

LABELS = {"driver_version": "driver", "driver_cuda": "driver CUDA", "gpus": "GPUs", "cuda_toolkit": "CUDA toolkit",
          "cudnn": "cuDNN", "python": "Python"}


def label(key: str) -> str:
    if key in LABELS:
        return LABELS[key]
    return key.replace("_build", " build")


LONG = 100  # a reference group's ranges longer than this are summed up: the outliers are what matters


def _hosts(group, drift: bool) -> str:
    text = fold(group.hosts)
    if drift and group.reference and len(text) > LONG:
        return f"the other {len(group.hosts)} nodes"
    return text


def _value(value) -> str:
    return "unknown" if value is None else value


def headline(view: FleetView) -> str:
    parts = [f"{view.nodes} node{'s' if view.nodes != 1 else ''}"]
    drifting = [label(k.key) for k in view.keys if k.drift]
    parts.append(f"drift in {', '.join(drifting)}" if drifting else "no drift")
    unhealthy = sum(len(h) for _, h, _ in view.unhealthy)
    if unhealthy:
        parts.append(f"{unhealthy} unhealthy")
    unknown = sum(len(h) for _, h in view.unknown)
    if unknown:
        parts.append(f"{unknown} cannot be judged")
    if view.silent:
        parts.append(f"{len(view.silent)} silent")
    if view.conflicting:
        parts.append(f"{len(view.conflicting)} sent differing documents")
    if view.unreadable:
        parts.append(f"{len(view.unreadable)} unreadable input{'s' if len(view.unreadable) != 1 else ''}")
    return "envdoctor fleet: " + ", ".join(parts)


def text(view: FleetView) -> str:
    from envdoctor.render import quiet

    if quiet():  # -q / ENVDOCTOR_QUIET=1: the verdict line and the problem nodes only
        return quiet_text(view)
    mark = "baseline" if view.reference_kind == "baseline" else "majority"
    lines = [headline(view), ""]
    same = [k for k in view.keys if not k.drift]
    drifted = [k for k in view.keys if k.drift]
    if same:
        lines.append("same on every node that recorded it:")
        for k in same:
            unknown = sum(len(g.hosts) for g in k.groups if g.value is None)
            note = f"  ({unknown} unknown: {fold(h for g in k.groups if g.value is None for h in g.hosts)})" if unknown else ""
            lines.append(f"  {label(k.key)}: {_value(k.reference)}{note}")
        lines.append("")
    for k in drifted:
        lines.append(f"{label(k.key)}: DRIFT")
        for g in k.groups:
            star = "*" if g.reference else " "
            tag = f", {mark}" if g.reference else ""
            lines.append(f"  {star} {_value(g.value)}  {_hosts(g, True)}  ({len(g.hosts)}{tag})")
        if k.reference is not None and not any(g.reference for g in k.groups):
            lines.append(f"  * {k.reference}  no node  (0, {mark})")
        if k.reference is None:
            lines.append("  no majority: the most common values are tied")
        lines.append("")
    if view.unhealthy:
        lines.append("unhealthy nodes (error findings):")
        lines += [f"  {fold(hosts)}: {verdict}" for verdict, hosts, _ in view.unhealthy]
        lines.append("")
    if view.unknown:
        lines.append("cannot be judged:")
        lines += [f"  {fold(hosts)}: {verdict}" for verdict, hosts in view.unknown]
        lines.append("")
    if view.silent:
        lines += [f"silent (expected, sent nothing): {fold(view.silent)}", ""]
    if view.unreadable:
        lines.append("unreadable inputs:")
        lines += [f"  {u.source}: {u.message}" for u in view.unreadable]
        lines.append("")
    if view.conflicting:
        lines.append("sent differing documents (each counted above):")
        lines += [f"  {host}: {count} documents" for host, count in view.conflicting]
        lines.append("")
    if view.duplicates:
        lines.append("sent identical copies (counted once): " + fold(h for h, _ in view.duplicates))
        lines.append("")
    return "\n".join(lines).rstrip() + "\n"


def quiet_text(view: FleetView) -> str:
    lines = [headline(view)]
    lines += [f"  {fold(hosts)}: {verdict}" for verdict, hosts, _ in view.unhealthy]
    lines += [f"  {u.source}: {u.message}" for u in view.unreadable]
    return "\n".join(lines) + "\n"


def markdown(view: FleetView) -> str:
    def cell(s: str) -> str:
        return s.replace("|", "\\|").replace("\n", " ")

    lines = ["## envdoctor fleet", "", f"**{cell(headline(view)[len('envdoctor fleet: '):])}**", "",
             "| key | value | nodes | count |", "|---|---|---|---|"]
    for k in view.keys:
        for g in k.groups:
            ref = f" ({view.reference_kind})" if g.reference and k.drift else ""
            name = f"**{label(k.key)}**" if k.drift else label(k.key)
            lines.append(f"| {name} | {cell(_value(g.value))}{ref} | `{_hosts(g, k.drift)}` | {len(g.hosts)} |")
    sections = [("Unhealthy nodes", [(fold(h), v) for v, h, _ in view.unhealthy]),
                ("Cannot be judged", [(fold(h), v) for v, h in view.unknown]),
                ("Silent (expected, sent nothing)", [(fold(view.silent), "")] if view.silent else []),
                ("Sent differing documents", [(h, f"{n} documents") for h, n in view.conflicting]),
                ("No majority (tied values)", [(label(k.key), "") for k in view.keys if k.drift and k.reference is None]),
                ("Unreadable inputs", [(u.source, u.message) for u in view.unreadable])]
    for title, rows in sections:
        if rows:
            lines += ["", f"### {title}", ""]
            lines += [f"- `{cell(a)}`" + (f": {cell(b)}" if b else "") for a, b in rows]
    return "\n".join(lines) + "\n"


def document(view: FleetView) -> dict:
    """The body of envdoctor.fleet/1 (envdoctor.render.print_json gives it its head)."""
    return {
        "nodes": view.nodes,
        "reference": view.reference_kind,
        "drift": view.drift,
        "keys": [{"key": k.key, "drift": k.drift, "reference": k.reference,
                  "groups": [{"value": g.value, "nodes": fold(g.hosts), "count": len(g.hosts), "reference": g.reference}
                             for g in k.groups]} for k in view.keys],
        "unhealthy": [{"nodes": fold(h), "count": len(h), "verdict": v, "codes": list(c)} for v, h, c in view.unhealthy],
        "unknown": [{"nodes": fold(h), "count": len(h), "verdict": v} for v, h in view.unknown],
        "silent": {"nodes": fold(view.silent), "count": len(view.silent)},
        "unreadable": [{"source": u.source, "host": u.host, "message": u.message} for u in view.unreadable],
        "duplicates": [{"host": h, "source": s} for h, s in view.duplicates],
        "conflicting": [{"host": h, "documents": n} for h, n in view.conflicting],
        "exit": view.exit_code(),
    }
