/**
 * WCAG's contrast ratio of an element's text against what it is drawn on, as a page script (a string:
 * tsx's __name helper would not exist in the page): the first opaque background up the tree (white if
 * none), the text's colour blended over it by its own alpha and every ancestor's opacity (a faded
 * outbox bubble fades its text too).
 */
export function contrastScript(selector: string): string {
  return `(() => {
  const el = document.querySelector(${JSON.stringify(selector)});
  const parse = (c) => (c.match(/[\\d.]+/g) || []).map(Number);
  const lum = ([r, g, b]) => [r, g, b].map((v) => { v /= 255; return v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4; }).reduce((s, v, i) => s + v * [0.2126, 0.7152, 0.0722][i], 0);
  let bg = [255, 255, 255];
  let opacity = 1;
  for (let node = el; node; node = node.parentElement) opacity *= Number(getComputedStyle(node).opacity);
  for (let node = el; node; node = node.parentElement) {
    const c = parse(getComputedStyle(node).backgroundColor);
    if (c.length === 3 || (c.length === 4 && c[3] === 1)) { bg = c.slice(0, 3); break; }
  }
  const color = parse(getComputedStyle(el).color);
  const alpha = (color.length === 4 ? color[3] : 1) * opacity;
  const fg = lum([0, 1, 2].map((i) => color[i] * alpha + bg[i] * (1 - alpha)));
  const back = lum(bg);
  return (Math.max(fg, back) + 0.05) / (Math.min(fg, back) + 0.05);
})()`;
}
