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
