// Our own small SVG charts: columns over time and horizontal bars by category. Each chart is drawn
// at its container's width (redrawn when that changes), so text stays legible on a phone. Every
// mark carries its value (data-value) and a <title> tooltip; the SVG has a text summary.

import { clear, h, s } from "./dom.js";

const FONT = 11;

function niceMax(value) {
  if (!(value > 0)) return 1;
  const power = 10 ** Math.floor(Math.log10(value));
  for (const step of [1, 2, 2.5, 5, 10]) {
    if (value <= step * power) return step * power;
  }
  return 10 * power;
}

function responsive(host, draw) {
  let width = 0;
  const redraw = () => {
    const now = Math.floor(host.clientWidth);
    if (now && now !== width) {
      width = now;
      clear(host).append(draw(width));
    }
  };
  const observer = new ResizeObserver(redraw);
  observer.observe(host);
  redraw();
  return host;
}

/**
 * Columns: data [{label, value, detail}] in order (e.g. days). ``format`` writes a value.
 * Returns the chart's host element.
 */
export function columnChart(data, { title, format = String, height = 200, alt = false, integer = false } = {}) {
  const host = h("div", { class: "chart", dataset: { chart: title } });
  if (!data.length) return host.appendChild(h("p", { class: "chart-empty" }, "Nothing in this range.")).parentNode;
  const total = data.reduce((sum, d) => sum + d.value, 0);
  return responsive(host, (width) => {
    const left = 56;
    const bottom = 22;
    const top = 10;
    const plotW = Math.max(60, width - left - 6);
    const plotH = height - top - bottom;
    const max = Math.max(integer ? 1 : 0, niceMax(Math.max(...data.map((d) => d.value))));
    const step = plotW / data.length;
    const barW = Math.max(2, Math.min(38, step * 0.7));
    const svg = s("svg", { width, height, viewBox: `0 0 ${width} ${height}`, role: "img",
      "aria-label": `${title}: ${format(total)} in all over ${data.length} ${data.length === 1 ? "entry" : "entries"}` });
    for (const frac of [0, 0.5, 1].filter((f) => !integer || Number.isInteger(max * f))) {
      const y = top + plotH - frac * plotH;
      svg.append(s("line", { class: frac ? "grid-line" : "axis", x1: left, x2: left + plotW, y1: y, y2: y }),
        s("text", { x: left - 6, y: y + 4, "text-anchor": "end", "font-size": FONT }, format(max * frac)));
    }
    const every = Math.max(1, Math.ceil((data.length * 46) / plotW));
    data.forEach((d, i) => {
      const x = left + i * step + (step - barW) / 2;
      const hgt = max ? (d.value / max) * plotH : 0;
      svg.append(s("rect", { class: `col${alt ? " alt" : ""}`, x, y: top + plotH - hgt, width: barW, height: Math.max(0, hgt), rx: 2,
        "data-label": d.label, "data-value": d.value }, s("title", null, `${d.label}: ${format(d.value)}${d.detail ? ` (${d.detail})` : ""}`)));
      if (i % every === 0) {
        svg.append(s("text", { x: left + i * step + step / 2, y: height - 6, "text-anchor": "middle", "font-size": FONT }, d.short || d.label));
      }
    });
    return svg;
  });
}

/** Horizontal bars: data [{label, value, detail}], largest first. */
export function barChart(data, { title, format = String } = {}) {
  const host = h("div", { class: "chart", dataset: { chart: title } });
  if (!data.length) return host.appendChild(h("p", { class: "chart-empty" }, "Nothing in this range.")).parentNode;
  const rows = [...data].sort((a, b) => b.value - a.value).slice(0, 12);
  return responsive(host, (width) => {
    const rowH = 30;
    const labelW = Math.min(180, Math.max(90, width * 0.32));
    const valueW = 110;
    const barMax = Math.max(40, width - labelW - valueW - 12);
    const height = rows.length * rowH + 4;
    const max = Math.max(...rows.map((r) => r.value)) || 1;
    const svg = s("svg", { width, height, viewBox: `0 0 ${width} ${height}`, role: "img",
      "aria-label": `${title}: ${rows.map((r) => `${r.label} ${format(r.value)}`).join(", ")}` });
    const chars = Math.floor(labelW / 6.6);
    rows.forEach((r, i) => {
      const y = i * rowH + 4;
      const label = r.label.length > chars ? `${r.label.slice(0, chars - 1)}…` : r.label;
      svg.append(
        s("text", { x: 0, y: y + 15, "font-size": FONT + 1 }, label, s("title", null, r.label)),
        s("rect", { class: "hbar-track", x: labelW, y: y + 5, width: barMax, height: 12, rx: 6 }),
        s("rect", { class: "hbar", x: labelW, y: y + 5, width: Math.max(2, (r.value / max) * barMax), height: 12, rx: 6,
          "data-label": r.label, "data-value": r.value }, s("title", null, `${r.label}: ${format(r.value)}${r.detail ? ` (${r.detail})` : ""}`)),
        s("text", { class: "value-label", x: width - 2, y: y + 15, "text-anchor": "end", "font-size": FONT + 1 }, format(r.value)));
    });
    return svg;
  });
}

const SERIES_SHAPES = { raw: "circle", calibrated: "square" };

function marker(shape, cx, cy, r, attrs, ...children) {
  if (shape === "square") return s("rect", { ...attrs, x: cx - r, y: cy - r, width: 2 * r, height: 2 * r }, ...children);
  return s("circle", { ...attrs, cx, cy, r }, ...children);
}

/** A legend entry's swatch: the series' line and marker. */
function swatch(name) {
  return s("svg", { class: "legend-swatch", width: 28, height: 12, viewBox: "0 0 28 12", "aria-hidden": "true" },
    s("line", { class: `rel-line ${name}`, x1: 1, x2: 27, y1: 6, y2: 6 }),
    marker(SERIES_SHAPES[name] || "circle", 14, 6, 3.5, { class: `rel-point ${name}` }));
}

/**
 * A reliability diagram: series [{name ("raw" | "calibrated"), label, bins: [{bin, lower, upper, n,
 * confidence, accuracy}]}], each bin a point at (its mean confidence, its accuracy) joined in order,
 * over the diagonal (a calibrated model's). Each series has its line, marker and colour; each point a
 * <title> with its bin and n, and data-series, data-bin, data-n, data-confidence, data-accuracy.
 */
export function reliabilityChart(series, { title, format = (v) => v.toFixed(3) } = {}) {
  const host = h("div", { class: "chart reliability", dataset: { chart: title } });
  if (!series.some((one) => one.bins.length)) return host.appendChild(h("p", { class: "chart-empty" }, "No outcomes in this range.")).parentNode;
  const plotHost = h("div", { class: "reliability-plot" });
  const legend = h("ul", { class: "legend", "aria-label": "Legend" },
    series.map((one) => h("li", null, swatch(one.name), one.label)),
    h("li", null, s("svg", { class: "legend-swatch", width: 28, height: 12, viewBox: "0 0 28 12", "aria-hidden": "true" },
      s("line", { class: "diagonal", x1: 1, x2: 27, y1: 11, y2: 1 })), "Ideal (confidence = accuracy)"));
  host.append(plotHost, legend);
  responsive(plotHost, (width) => {
    const size = Math.max(200, Math.min(width, 440));
    const left = 44;
    const top = 8;
    const right = 10;
    const bottom = 38;
    const plot = size - left - right;
    const height = plot + top + bottom;
    const x = (v) => left + v * plot;
    const y = (v) => top + plot - v * plot;
    const svg = s("svg", { width: size, height, viewBox: `0 0 ${size} ${height}`, role: "img",
      "aria-label": `${title}: ${series.map((one) => `${one.label}, ${one.bins.length} bins`).join("; ")}; the diagonal is a calibrated model` });
    for (const t of [0, 0.25, 0.5, 0.75, 1]) {
      svg.append(s("line", { class: t ? "grid-line" : "axis", x1: x(0), x2: x(1), y1: y(t), y2: y(t) }),
        s("line", { class: t ? "grid-line" : "axis", x1: x(t), x2: x(t), y1: y(0), y2: y(1) }),
        s("text", { x: left - 6, y: y(t) + 4, "text-anchor": "end", "font-size": FONT }, String(t)),
        s("text", { x: x(t), y: top + plot + 15, "text-anchor": "middle", "font-size": FONT }, String(t)));
    }
    svg.append(s("line", { class: "diagonal", x1: x(0), y1: y(0), x2: x(1), y2: y(1) }),
      s("text", { x: left + plot / 2, y: height - 4, "text-anchor": "middle", "font-size": FONT }, "Confidence (top-1 probability, by bin)"),
      s("text", { x: 11, y: top + plot / 2, "text-anchor": "middle", "font-size": FONT, transform: `rotate(-90 11 ${top + plot / 2})` }, "Accuracy"));
    // Lines first, then the markers, the first series' last: where the series agree, its dot sits inside the other's square.
    const pointsOf = (one) => one.bins.filter((b) => b.n > 0 && b.confidence !== null && b.accuracy !== null);
    for (const one of series) {
      const points = pointsOf(one);
      if (points.length > 1) {
        svg.append(s("polyline", { class: `rel-line ${one.name}`, points: points.map((b) => `${x(b.confidence)},${y(b.accuracy)}`).join(" ") }));
      }
    }
    for (const one of [...series].reverse()) {
      const shape = SERIES_SHAPES[one.name] || "circle";
      for (const b of pointsOf(one)) {
        svg.append(marker(shape, x(b.confidence), y(b.accuracy), shape === "square" ? 5 : 3.5, {
          class: `rel-point ${one.name}`, "data-series": one.name, "data-bin": b.bin, "data-n": b.n,
          "data-confidence": b.confidence, "data-accuracy": b.accuracy,
        }, s("title", null, `${one.label} · bin ${format(b.lower)}–${format(b.upper)}: n ${b.n}, ` +
          `confidence ${format(b.confidence)}, accuracy ${format(b.accuracy)}`)));
      }
    }
    return svg;
  });
  return host;
}
