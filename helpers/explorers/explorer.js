/* The course's static explorers (helpers/explorers/static.py): native controls over a stored grid of states.
   Plain JavaScript, no framework, nothing fetched. Runs once per page however many forms carry it. */
(function () {
  "use strict";
  if (window.courseExplorers) { window.courseExplorers.scan(); return; }

  var CSS =
    ".course-static-live{font-family:sans-serif;font-size:13px;color:var(--jp-content-font-color1,#222)}" +
    ".course-static-live .explorer-controls{display:flex;flex-wrap:wrap;align-items:center;gap:6px 18px;margin:4px 0 8px 0}" +
    ".course-static-live label,.course-static-live .explorer-group{display:inline-flex;flex-wrap:wrap;align-items:center;gap:4px}" +
    ".course-static-live input[type=range]{width:220px;max-width:60vw}" +
    ".course-static-live output{min-width:3em;font-variant-numeric:tabular-nums;font-weight:bold}" +
    ".course-static-live button{font:inherit;padding:4px 10px;border:1px solid var(--jp-border-color1,#999);" +
    "background:var(--jp-layout-color2,#eee);color:var(--jp-ui-font-color1,#111);cursor:pointer;border-radius:2px}" +
    ".course-static-live button[aria-pressed=true]{background:#1565c0;color:#fff;font-weight:bold;" +
    "box-shadow:inset 0 0 0 2px var(--jp-content-font-color0,#000);text-decoration:underline}" +
    ".course-static-live select{font:inherit;color:inherit;background:var(--jp-layout-color1,#fff)}" +
    ".course-static-live :focus-visible{outline:3px solid #e65100;outline-offset:2px}" +
    ".course-static-live .explorer-picture{max-width:100%;overflow-x:auto}" +
    ".course-static-live .explorer-missing{border:1px solid #888;padding:8px}";

  function el(tag, attrs, text) {
    var e = document.createElement(tag);
    Object.keys(attrs || {}).forEach(function (k) { e.setAttribute(k, attrs[k]); });
    if (text !== undefined) { e.textContent = text; }
    return e;
  }

  function build(spec, form) {
    var controls = spec.controls, values = {}, inputs = {};
    var root = el("div", {"class": "course-static-live", "data-explorer": spec.name});
    var bar = el("div", {"class": "explorer-controls"});
    var picture = el("div", {"class": "explorer-picture", "aria-live": "polite"});
    // A form whose states are drawn by a script of its own (the real model's: real_model.js) names its drawer.
    var draw = spec.draw ? (window.courseExplorerDrawers || {})[spec.draw] : null;
    if (spec.draw && !draw) { throw new Error("no drawer " + spec.draw); }
    function key() { return JSON.stringify(controls.map(function (c) { return values[c.name]; })); }
    function has(name, value) {
      var saved = values[name]; values[name] = value;
      var found = Object.prototype.hasOwnProperty.call(spec.states, key());
      values[name] = saved; return found;
    }
    function show() {
      controls.forEach(function (c) { if (c.follows) { follow(c); } });
      var k = key(), ids = draw ? null : spec.states[k];
      root.setAttribute("data-state", k);
      if (draw) { picture.innerHTML = draw(spec, values); return; }
      if (!ids) {
        picture.textContent = "";
        picture.appendChild(el("div", {"class": "explorer-missing"}, spec.missing));
        return;
      }
      picture.innerHTML = ids.map(function (i) { return spec.pieces[i]; }).join("");
      var styled = picture.querySelectorAll("[data-s]");
      for (var j = 0; j < styled.length; j++) {
        styled[j].setAttribute("style", spec.styles[+styled[j].getAttribute("data-s")]);
        styled[j].removeAttribute("data-s");
      }
    }
    function follow(c) {  // a slider whose range follows another control (the tiling explorer's step)
      var valid = [];
      c.options.forEach(function (o, i) { if (has(c.name, o[1])) { valid.push(i); } });
      if (!valid.length) { return; }
      var input = inputs[c.name], last = valid[valid.length - 1];
      input.max = String(last);
      if (+input.value > last) { input.value = String(last); }
      setRange(c, +input.value);
    }
    function setRange(c, i) {
      values[c.name] = c.options[i][1];
      inputs[c.name].setAttribute("aria-valuetext", c.options[i][0]);
      inputs[c.name + ":out"].textContent = c.options[i][0];
    }
    controls.forEach(function (c) {
      values[c.name] = c.value;
      var box;
      if (c.kind === "range") {
        box = el("label", {}, c.label + " ");
        var start = 0;
        c.options.forEach(function (o, i) { if (JSON.stringify(o[1]) === JSON.stringify(c.value)) { start = i; } });
        var range = el("input", {"type": "range", "min": "0", "max": String(c.options.length - 1), "step": "1",
                                 "value": String(start), "name": c.name});
        var out = el("output", {}, c.options[start][0]);
        inputs[c.name] = range; inputs[c.name + ":out"] = out;
        range.addEventListener("input", function () { setRange(c, +range.value); show(); });
        box.appendChild(range); box.appendChild(out);
        setRange(c, start);
      } else if (c.kind === "checkbox") {
        box = el("label", {});
        var check = el("input", {"type": "checkbox", "name": c.name});
        check.checked = !!c.value; inputs[c.name] = check;
        check.addEventListener("change", function () { values[c.name] = check.checked; show(); });
        box.appendChild(check); box.appendChild(document.createTextNode(" " + c.label));
      } else if (c.kind === "select") {
        box = el("label", {}, c.label + " ");
        var select = el("select", {"name": c.name});
        c.options.forEach(function (o, i) {
          var opt = el("option", {"value": String(i)}, o[0]);
          if (JSON.stringify(o[1]) === JSON.stringify(c.value)) { opt.selected = true; }
          select.appendChild(opt);
        });
        inputs[c.name] = select;
        select.addEventListener("change", function () { values[c.name] = c.options[+select.value][1]; show(); });
        box.appendChild(select);
      } else {  // "buttons": one pressed of several; "toggles": each pressed or not (a tuple of positions)
        box = el("span", {"class": "explorer-group", "role": "group", "aria-label": c.label}, c.label + " ");
        var buttons = c.options.map(function (o, i) {
          var pressed = c.kind === "buttons" ? JSON.stringify(o[1]) === JSON.stringify(c.value)
                                             : c.value.indexOf(i) >= 0;
          var b = el("button", {"type": "button", "aria-pressed": String(pressed), "name": c.name}, o[0]);
          b.addEventListener("click", function () {
            if (c.kind === "buttons") {
              buttons.forEach(function (other) { other.setAttribute("aria-pressed", String(other === b)); });
              values[c.name] = o[1];
            } else {
              b.setAttribute("aria-pressed", String(b.getAttribute("aria-pressed") !== "true"));
              values[c.name] = buttons.map(function (x, k) { return x.getAttribute("aria-pressed") === "true" ? k : -1; })
                                      .filter(function (k) { return k >= 0; });
            }
            show();
          });
          box.appendChild(b);
          return b;
        });
        inputs[c.name] = buttons;
      }
      if (c.note) { box.appendChild(el("span", {"class": "explorer-control-note"}, " " + c.note)); }
      bar.appendChild(box);
    });
    if (spec.intro) { root.appendChild(el("p", {"class": "explorer-intro"}, spec.intro)); }  // in a fixed control's place
    root.appendChild(bar);
    root.appendChild(picture);
    root.appendChild(el("p", {"class": "explorer-kernel-line"}, spec.line));
    show();  // before the form is shown: if a state cannot be drawn, the still picture stays
    var still = form.querySelector(".course-explorer-still");
    if (still) { still.hidden = true; still.style.display = "none"; }
    form.appendChild(root);
  }

  function scan() {
    var grids = document.querySelectorAll("script.course-explorer-grid");
    for (var i = 0; i < grids.length; i++) {
      var data = grids[i], form = data.closest(".course-explorer-static");
      if (!form || form.getAttribute("data-ready")) { continue; }
      form.setAttribute("data-ready", "1");
      try { build(JSON.parse(data.textContent), form); } catch (e) { /* the still picture stays */ }
    }
  }

  var style = document.createElement("style");
  style.textContent = CSS;
  document.head.appendChild(style);
  window.courseExplorers = {scan: scan};
  scan();
  document.addEventListener("DOMContentLoaded", scan);
})();
