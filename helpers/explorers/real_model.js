/* The real model's explorer on the static page (helpers/explorers/real_model_static.py): it draws one state
   from the stored numbers as the live explorer draws it (the messages, the chosen token's row as
   plots.weights_row_html, the head's heatmap as plots.weights_table_html). explorer.js builds the controls
   and calls it for a form whose spec says "draw": "real_model". Plain JavaScript, nothing fetched. */
(function () {
  "use strict";
  var drawers = window.courseExplorerDrawers = window.courseExplorerDrawers || {};

  function esc(text) {  // as Python's html.escape
    return String(text).replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;")
      .replace(/"/g, "&quot;").replace(/'/g, "&#x27;");
  }
  function fill(template, slots) {  // one pass, as real_model_static.fill: a filled-in text is not filled again
    return template.replace(/\{(\w+)\}/g, function (whole, name) { return String(slots[name]); });
  }
  function head(real, layer, h) {  // one head's numbers, split once
    var e = real.grid[layer * real.heads.length + h];
    if (!e.split) {
      e.split = {w: e.w.split(" "), s: (e.s || e.w).split(" "), c: e.c.split(" "), r: e.r.split(" ")};
    }
    return e;
  }

  drawers.real_model = function (spec, values) {
    var real = spec.real, look = real.look, t = real.templates, tokens = real.tokens, n = tokens.length;
    var layer = values.layer, h = values.head, i = values.token, e = head(real, layer, h), d = e.split;
    function colour(k) { var p = real.palette[+d.c[k]]; return "background:" + p[0] + ";color:" + p[1]; }

    var keys = e.top[i].map(function (j) {
      return fill(t.key, {position: j, token: tokens[j], weight: d.s[i * n + j]});
    }).join(t.keys_sep);
    var messages = [fill(t.message, {layer: layer, head: h, token: tokens[i], position: i, keys: keys,
                                     entropy: d.r[i]})].concat(real.messages);
    var out = messages.map(function (m) { return "<p style='" + look.message + "'>" + esc(m) + "</p>"; }).join("");

    out += look.strip_open + esc(fill(t.strip_title, {token: tokens[i], position: i})) + "</div><div>";
    for (var j = 0; j < n; j++) {
      var kind = j === i ? "marked" : "plain", label = (j === i ? look.key_mark : "") + tokens[j];
      out += "<div style='" + look.box + "' title='key " + j + ": " + esc(label) + "'>" +
        "<div style='" + look["label_" + kind] + "'>" + esc(label) + "</div>" +
        "<div style='" + look["value_" + kind] + colour(i * n + j) + "'>" + d.s[i * n + j] + "</div></div>";
    }
    out += "</div></div>" + look.spacer;

    out += look.table_open + esc(fill(t.table_title, {layer: layer, head: h, entropy: e.e})) + "</caption>" + look.header;
    for (var q = 0; q < n; q++) {
      var query = esc((q === i ? look.query_mark : "") + tokens[q]);
      out += "<tr><th scope='row' style='" + look.row + "'>" + query + "</th>";
      for (var k = 0; k < n; k++) {
        var v = d.w[q * n + k];
        out += "<td style='" + look.cell + colour(q * n + k) + "' title='" + query + " to " + esc(tokens[k]) + ": " +
          v + "'>" + v + "</td>";
      }
      out += "</tr>";
    }
    return out + look.table_close;
  };
})();
