/* The course's exercises on a static page (helpers/exercises/static.py): no kernel, no network.
   Each element [data-exercise] holds its data as JSON; this script builds the form from it (a text box, or
   radio buttons for a choice), reads a typed answer as a learner pastes it (0.5, [0.3, 0.5], numpy's printed
   [[0.25 0.75]\n [0.6  0.4 ]], True/False, -inf, nan, the page's own −∞) and answers with the kernel's own
   texts. */
(function () {
  "use strict";
  var UNREADABLE = "I could not read that: type a number or a list like [0.1, 0.2].";
  var THOUSANDS = /^\s*[+-]?[1-9]\d{0,2}(?:,\d{3})+(?:\.\d*)?\s*$/;   // 12,345,678: one number, with commas
  var DECIMAL_COMMA = /^\s*[+\u2212-]?\d+,\d+\s*$/;                 // -0,125: a decimal comma (one, no point)
  var NO_CHOICE = "Choose one of the options first.";
  var NUMBER = /^[+-]?(?:(?:\d+\.?\d*|\.\d+)(?:e[+-]?\d+)?|inf|infinity|nan)$/i;

  function stored(x) {                       // a stored number: a float, or "inf", "-inf", "nan"
    if (x === "inf") { return Infinity; }
    if (x === "-inf") { return -Infinity; }
    if (x === "nan" || x === null) { return NaN; }
    return Number(x);
  }

  function tree(v) {                         // stored nested lists -> nested JS numbers
    return Array.isArray(v) ? v.map(tree) : stored(v);
  }

  function word(tok) {                       // one token -> a number, or null
    var t = tok.replace(/^([+-]?)(?:np|numpy|math)\./i, "$1");
    if (t === "True" || t === "true") { return 1; }
    if (t === "False" || t === "false") { return 0; }
    if (!NUMBER.test(t)) { return null; }
    var low = t.toLowerCase().replace(/^\+/, "");
    if (low === "inf" || low === "infinity") { return Infinity; }
    if (low === "-inf" || low === "-infinity") { return -Infinity; }
    if (/nan$/.test(low)) { return NaN; }
    return parseFloat(t);
  }

  function read(text) {                      // a typed answer -> a number or nested arrays, or null
    var s = String(text == null ? "" : text).replace(/\u2212/g, "-").replace(/\u221e/g, "inf");   // −∞ as printed
    s = s.replace(/,?\s*dtype\s*=\s*[\w.]+/g, "");
    s = s.replace(/(?:np\.|numpy\.)?(?:asarray|array|float64|float32|int64|int32|bool_)\s*(?=\()/g, "");
    var toks = s.match(/\[|\]|\(|\)|,|[^\s\[\]\(\),]+/g);
    if (!toks) { return null; }
    var i = 0;
    function group(close) {                  // after an opening bracket: values up to ``close``
      var items = [], commas = 0;
      while (i < toks.length && toks[i] !== close) {
        if (toks[i] === ",") { commas += 1; i += 1; continue; }
        var v = value();
        if (v === null) { return null; }
        items.push(v);
      }
      if (i >= toks.length) { return null; }   // never closed
      i += 1;
      if (close === ")" && items.length === 1 && commas === 0) { return items[0]; }   // (0.5) is 0.5
      return items;
    }
    function value() {
      var t = toks[i];
      i += 1;
      if (t === "[") { return group("]"); }
      if (t === "(") { return group(")"); }
      var n = word(t);
      return n === null ? null : n;
    }
    var all = [], v, commas = 0;
    while (i < toks.length) {
      if (toks[i] === ",") { commas += 1; i += 1; continue; }
      v = value();
      if (v === null) { return null; }
      all.push(v);
    }
    if (all.length === 0) { return null; }
    return all.length === 1 && commas === 0 ? all[0] : all;  // "0.3 0.5", "0.3, 0.5" and "8," are lists
  }

  function shape(v) {                        // the shape of nested arrays, or null when ragged
    if (!Array.isArray(v)) { return []; }
    if (v.length === 0) { return [0]; }
    var first = shape(v[0]);
    if (first === null) { return null; }
    for (var k = 1; k < v.length; k += 1) {
      var other = shape(v[k]);
      if (other === null || other.join(",") !== first.join(",")) { return null; }
    }
    return [v.length].concat(first);
  }

  function flat(v, out) {
    if (Array.isArray(v)) { v.forEach(function (x) { flat(x, out); }); } else { out.push(v); }
    return out;
  }

  function tolerance(atol, dims) {           // the tolerance of each entry, numpy-broadcast against dims
    var tshape = shape(atol), tflat = flat(atol, []), size = 1, out = [];
    dims.forEach(function (d) { size *= d; });
    if (tshape === null || tshape.length > dims.length) { return null; }
    for (var k = 0; k < tshape.length; k += 1) {
      var d = dims[dims.length - tshape.length + k];
      if (tshape[k] !== 1 && tshape[k] !== d) { return null; }
    }
    for (var n = 0; n < size; n += 1) {
      var rest = n, at = 0, stride = 1;
      for (var j = dims.length - 1; j >= 0; j -= 1) {
        var idx = rest % dims[j];
        rest = Math.floor(rest / dims[j]);
        var t = j - (dims.length - tshape.length);
        if (t >= 0) {
          at += (tshape[t] === 1 ? 0 : idx) * stride;
          stride *= tshape[t];
        }
      }
      out.push(tflat[at]);
    }
    return out;
  }

  function close(a, b, atol, fill) {         // as _NumericExercise._close: within atol, the same inf, or a fill
    var sa = shape(a), sb = shape(b);
    if (sa === null || sb === null || sa.join(",") !== sb.join(",")) { return false; }
    var fa = flat(a, []), fb = flat(b, []), tol = tolerance(atol, sb);
    if (tol === null) { return false; }
    for (var k = 0; k < fa.length; k += 1) {
      var x = fa[k], y = fb[k];
      if (!(Math.abs(x - y) <= tol[k] || x === y || (y === -Infinity && x <= fill))) { return false; }
    }
    return true;
  }

  function rounded(data, answer) {           // as _rounded_to: the right answer rounded to k < 3 decimals, or null
    var want = tree(data.expected), sa = shape(answer), sw = shape(want);
    if (sa.join(",") !== sw.join(",")) { return null; }
    var fa = flat(answer, []), fw = flat(want, []);
    for (var r = 0; r < (data.rounded || []).length; r += 1) {
      var k = data.rounded[r][0], unit = Math.pow(10, k), ok = true;
      for (var n = 0; n < fa.length && ok; n += 1) {
        ok = Math.abs(fa[n] - Math.round(fa[n] * unit) / unit) <= 1e-9 && Math.abs(fa[n] - fw[n]) <= 0.5 / unit + 1e-9;
      }
      if (ok) { return data.rounded[r][1]; }
    }
    return null;
  }

  function verdict(data, text) {             // the feedback on a typed answer
    var single = shape(tree(data.expected)).length === 0;
    if (single && DECIMAL_COMMA.test(String(text))) {   // "-0,125": a decimal comma, when a point makes it an answer
      var pointed = String(text).trim().replace(",", ".").replace("\u2212", "-");
      var known = [data.correct].concat(data.mistakes.map(function (m) { return m.text; }));
      if (known.indexOf(verdict(data, pointed)) >= 0) { return "Use a point for decimals: " + pointed + "."; }
    }
    if (single && THOUSANDS.test(String(text))) {
      return "Type the number without commas: " + String(text).replace(/[\s,]/g, "") + ".";
    }
    var answer = /^\s*(true|false)\s*$/i.test(String(text)) ? null : read(text);   // a lone True: not a number
    if (answer === null || shape(answer) === null) { return UNREADABLE; }
    var atol = tree(data.atol), fill = stored(data.masked_fill);
    var finite = function (v) { return flat(v, []).every(isFinite); };
    var whole = finite(answer);              // as the kernel: inf or nan is matched with such mistakes only
    if (whole && close(answer, tree(data.expected), atol, fill)) { return data.correct; }
    for (var k = 0; k < data.mistakes.length; k += 1) {
      var value = tree(data.mistakes[k].value);
      if ((whole || !finite(value)) && close(answer, value, atol, fill)) { return data.mistakes[k].text; }
    }
    var far = whole ? rounded(data, answer) : null;
    return far !== null ? far : "Not yet. Hint: " + data.hint;
  }

  function make(tag, attrs, text) {
    var el = document.createElement(tag);
    Object.keys(attrs || {}).forEach(function (k) { el.setAttribute(k, attrs[k]); });
    if (text) { el.textContent = text; }
    return el;
  }

  function build(box, count) {
    var json = box.querySelector("script[type='application/json']");
    if (!json || box.getAttribute("data-built")) { return; }
    var data = JSON.parse(json.textContent);
    var id = "course-exercise-" + count;
    var feedback = make("div", {"data-feedback": "", "aria-live": "polite"});
    var button = make("button", {type: "button"}, "Check");
    var form = make("div", {role: "group", "aria-label": "Answer " + data.name + " on this page"});
    var answerOf;
    if (data.kind === "choice") {
      var field = make("fieldset");
      field.appendChild(make("legend", {}, "Your choice"));
      data.options.forEach(function (opt) {
        var label = make("label", {style: "display:block"});
        var radio = make("input", {type: "radio", name: id, value: opt[0]});
        label.appendChild(radio);
        var key = opt[0].length === 1 ? "(" + opt[0] + ") " : opt[0] + ": ";   // as ChoiceExercise.question()
        label.appendChild(document.createTextNode(" " + key + opt[1]));
        field.appendChild(label);
      });
      form.appendChild(field);
      answerOf = function () {
        var on = field.querySelector("input:checked");
        if (!on) { return NO_CHOICE; }
        return data.feedback[on.value] || NO_CHOICE;
      };
    } else {
      var many = Array.isArray(data.expected) && Array.isArray(data.expected[0]);
      var input = make(many ? "textarea" : "input",
                       many ? {id: id, rows: String(Math.min(Math.max(data.expected.length, 2), 10)), spellcheck: "false"} : {id: id, type: "text", spellcheck: "false", autocomplete: "off"});
      form.appendChild(make("label", {"for": id}, "Your answer: "));
      form.appendChild(input);
      answerOf = function () { return verdict(data, input.value); };
      input.addEventListener("keydown", function (ev) {
        if (ev.key === "Enter" && !ev.shiftKey) { ev.preventDefault(); button.click(); }
      });
    }
    button.addEventListener("click", function () {
      var said;
      try { said = answerOf(); } catch (err) { said = UNREADABLE; }
      feedback.textContent = said;
    });
    form.appendChild(button);
    form.appendChild(feedback);
    box.appendChild(form);
    box.setAttribute("data-built", "yes");
    var printed = box.previousElementSibling;  // "Not attempted yet: ... run this cell": no cell to run here
    if (printed && printed.hasAttribute("data-not-attempted")) { printed.hidden = true; printed.style.display = "none"; }
  }

  function init() {
    var boxes = document.querySelectorAll("[data-exercise]");
    for (var k = 0; k < boxes.length; k += 1) {
      try { build(boxes[k], k); } catch (err) { /* a broken form stays as its printed text */ }
    }
  }

  if (document.readyState === "loading") { document.addEventListener("DOMContentLoaded", init); }
  init();
}());
