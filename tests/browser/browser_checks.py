"""What the browser tests share: the projector's page size and the text-contrast check.

Used by test_projector.py (the explorers in JupyterLab) and test_static_pages.py (the exported site).
"""

#: A classroom projector of 1024 x 768 zoomed to 150%: a page of 683 x 512 CSS pixels at a device scale of 1.5.
PROJECTOR = {"viewport": {"width": 683, "height": 512}, "device_scale_factor": 1.5}

#: The WCAG 2.1 contrast of every visible piece of text under ``root`` against what is behind it (the first
#: opaque background up the tree, or the first stripe colour of a striped cell); returns the pieces under 4.5:1,
#: as "text: colour on background = ratio". Controls (sliders, buttons, inputs) are left out.
CONTRAST_JS = """
(root) => {
  const channels = (c) => (c.match(/[\\d.]+/g) || []).map(Number);
  const lum = (c) => {
    const [r, g, b] = channels(c).slice(0, 3).map(v => { v /= 255; return v <= 0.04045 ? v / 12.92 : Math.pow((v + 0.055) / 1.055, 2.4); });
    return 0.2126 * r + 0.7152 * g + 0.0722 * b;
  };
  const behind = (el) => {
    for (let e = el; e; e = e.parentElement) {
      const s = getComputedStyle(e);
      const stripes = s.backgroundImage.match(/rgba?\\([^)]*\\)/);
      if (stripes) return stripes[0];        // striped (masked) cells: their first stripe colour
      const c = channels(s.backgroundColor);
      if (c.length === 3 || (c.length === 4 && c[3] > 0.5)) return s.backgroundColor;
    }
    return getComputedStyle(document.body).backgroundColor;
  };
  const low = [];
  root.querySelectorAll('*').forEach(el => {
    const own = [...el.childNodes].some(n => n.nodeType === 3 && n.textContent.trim());
    if (!own || el.getClientRects().length === 0 || el.closest('.widget-slider, .jupyter-button, select, input')) return;
    const fg = getComputedStyle(el).color, bg = behind(el);
    const [a, b] = [lum(fg), lum(bg)].sort((x, y) => y - x);
    const ratio = (a + 0.05) / (b + 0.05);
    if (ratio < 4.5) low.push(`${el.textContent.trim().slice(0, 30)}: ${fg} on ${bg} = ${ratio.toFixed(2)}`);
  });
  return low;
}
"""
