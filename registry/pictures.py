"""Pictures on the registry's pages, drawn on the server as inline SVG (no scripts).

- :func:`requirements_svg`: a version and the module versions its wgt.mod
  requires, each a link to its page.
- :func:`layers_svg`: a WeightLang model's layers in order, each box saying
  where its weights come from: random, trained, or imported from which
  module@version (frozen or trained further), read from the artifact's
  manifest (``weights.tensors[*].origin`` and ``imports``).

Every string is escaped: module paths, layer names and versions come from
whoever published the release.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from html import escape
from typing import Any

__all__ = ["layers_svg", "requirements_svg"]

_BOX_W, _BOX_H, _GAP = 190, 74, 36
_FONT = 'font-family="Helvetica, Arial, sans-serif" font-size="12"'
_COLOURS = {
    "random": "#f4f4f4",
    "trained": "#e3f1e3",
    "imported": "#e3ecf8",
    "imported+trained": "#efe6f6",
    "": "#ffffff",
}


def _clip(text: str, n: int = 28) -> str:
    return text if len(text) <= n else text[: n - 1] + "…"


def _text(x: float, y: float, s: str, *, bold: bool = False, anchor: str = "middle") -> str:
    weight = ' font-weight="bold"' if bold else ""
    return f'<text x="{x:.0f}" y="{y:.0f}" text-anchor="{anchor}"{weight}>{escape(s)}</text>'


def requirements_svg(main: str, requires: Sequence[tuple[str, str, str]]) -> str:
    """``main`` (module@version) and its requirements ``(path, version, href)``, left to right."""
    labels = [f"{p}@{v}" for p, v, _ in requires]
    # about 7 px a character at 12 px Helvetica: boxes as wide as their longest label
    w1 = max(160, 7 * len(main) + 24)
    w2 = max(160, 7 * max((len(x) for x in labels), default=0) + 24)
    step = _BOX_H // 2 + 14
    height = max(1, len(requires)) * step + 20
    x2 = w1 + 90
    width = x2 + w2 + 8
    my = height / 2
    out = [
        f'<svg class="graph" xmlns="http://www.w3.org/2000/svg" width="{width}" '
        f'height="{height}" viewBox="0 0 {width} {height}" role="img" '
        f'aria-label="requirements of {escape(main)}" {_FONT}>',
        f'<rect x="4" y="{my - 18:.0f}" width="{w1}" height="36" rx="6" '
        'fill="#fff" stroke="#333" stroke-width="2"/>',
        _text(4 + w1 / 2, my + 4, main, bold=True),
    ]
    for i, ((_, _, href), label) in enumerate(zip(requires, labels)):
        y = 10 + i * step
        out.append(f'<line x1="{4 + w1}" y1="{my:.0f}" x2="{x2}" y2="{y + 18}" stroke="#888"/>')
        out.append(
            f'<a href="{escape(href)}"><rect x="{x2}" y="{y}" width="{w2}" height="36" '
            'rx="6" fill="#fff" stroke="#555"/>' + _text(x2 + w2 / 2, y + 22, label) + "</a>"
        )
    if not requires:
        out.append(_text(x2, my + 4, "requires nothing", anchor="start"))
    out.append("</svg>")
    return "".join(out)


def _origins(tensors: Mapping[str, Any]) -> dict[str, str]:
    """The first origin among each layer's tensors, in one pass over them (not one per layer):
    a tensor ``A.B.weight`` with an origin gives it to ``A`` and ``A.B`` unless an earlier
    one did (a layer's tensors are named for it, then a dot)."""
    first: dict[str, str] = {}
    for name, info in tensors.items():
        if not (isinstance(info, Mapping) and isinstance(info.get("origin"), str)):
            continue
        origin = str(info["origin"])
        at = name.find(".")
        while at >= 0:
            first.setdefault(name[:at], origin)
            at = name.find(".", at + 1)
    return first


def _origin(layer: str, tensors: Mapping[str, Any], first: Mapping[str, str]) -> str:
    """The origin of a layer's weights: that of its ``LAYER.weight``, else of the first of its
    tensors that has one (``first`` is :func:`_origins`)."""
    info = tensors.get(f"{layer}.weight")
    if isinstance(info, Mapping) and isinstance(info.get("origin"), str):
        return str(info["origin"])
    return first.get(layer, "")


def layers_svg(doc: Mapping[str, Any], limit: int | None = None) -> str | None:
    """The layers of a WeightLang manifest with their provenance, or ``None`` if it has none;
    the first ``limit`` of them when given, and a last box saying how many more there are."""
    layers = [x for x in doc.get("layers") or [] if isinstance(x, Mapping)]
    if not layers:
        return None
    more = len(layers) - limit if limit is not None and len(layers) > limit else 0
    if more:
        layers = layers[:limit]
    weights = doc.get("weights")
    tensors = weights.get("tensors") if isinstance(weights, Mapping) else None
    tensors = tensors if isinstance(tensors, Mapping) else {}
    imports: dict[str, Mapping[str, Any]] = {}
    for x in doc.get("imports") or []:
        if isinstance(x, Mapping) and isinstance(x.get("layer"), str):
            imports[x["layer"]] = x
    first = _origins(tensors)
    width = (len(layers) + (1 if more else 0)) * (_BOX_W + _GAP) + 10
    height = _BOX_H + 20
    out = [
        f'<svg class="layers" xmlns="http://www.w3.org/2000/svg" width="{width}" '
        f'height="{height}" viewBox="0 0 {width} {height}" role="img" '
        f'aria-label="layers of {escape(_clip(str(doc.get("model", "")), 80))}" {_FONT}>'
    ]
    for i, layer in enumerate(layers):
        name = str(layer.get("name", ""))
        x = 5 + i * (_BOX_W + _GAP)
        origin = _origin(name, tensors, first)
        imp = imports.get(name)
        if imp is not None:
            pkg = imp.get("package")
            how = "frozen" if imp.get("frozen") else "trained further"
            if isinstance(pkg, Mapping):
                detail = [f"from {pkg.get('module', '')}", f"@{pkg.get('version', '')}, {how}"]
            else:
                detail = [f"from {imp.get('source', 'a path')}", how]
        else:
            detail = [origin or "no weights", ""]
        fill = _COLOURS.get(origin, "#ffffff")
        out.append(
            f'<rect x="{x}" y="10" width="{_BOX_W}" height="{_BOX_H}" rx="6" '
            f'fill="{fill}" stroke="#555"/>'
        )
        title = _clip(f"{name} = {layer.get('op', '')}", 31)
        out.append(_text(x + _BOX_W / 2, 28, title, bold=True))
        out.append(_text(x + _BOX_W / 2, 46, _clip(detail[0], 31)))
        if detail[1]:
            out.append(_text(x + _BOX_W / 2, 62, _clip(detail[1], 31)))
        if i:
            out.append(
                f'<line x1="{x - _GAP}" y1="{10 + _BOX_H / 2:.0f}" x2="{x}" '
                f'y2="{10 + _BOX_H / 2:.0f}" stroke="#333" marker-end="url(#arrow)"/>'
            )
    if more:
        x = 5 + len(layers) * (_BOX_W + _GAP)
        out.append(_text(x + _BOX_W / 2, 10 + _BOX_H / 2 + 4, f"… and {more:,} more layers"))
    out.insert(
        1,
        '<defs><marker id="arrow" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="6" '
        'markerHeight="6" orient="auto"><path d="M0,0 L10,5 L0,10 z" fill="#333"/></marker></defs>',
    )
    out.append("</svg>")
    return "".join(out)
