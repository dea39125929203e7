// The portal's one script (script-src 'self'; no eval, no inline code).
// The page is complete without it: it refreshes the figures from
// /api/market every 30 seconds while the tab is visible, and makes the
// copy buttons work. Numbers stay exact: JSON numbers are read from their
// source text (JSON.parse's reviver context), never through a float; a
// browser that cannot do that keeps the figures the server rendered.
(function () {
  "use strict";
  var PERIOD = 30000;
  var timer = null;

  function exactJSONSupported() {
    try {
      return JSON.parse("0.1000000000000000000001", function (k, v, c) { return c && c.source; }) ===
        "0.1000000000000000000001";
    } catch (e) {
      return false;
    }
  }

  function parseExact(text) {
    return JSON.parse(text, function (k, v, c) {
      return typeof v === "number" && c && typeof c.source === "string" ? c.source : v;
    });
  }

  // group puts a comma between each group of three digits of the integer
  // part, as the server's groupDigits.
  function group(s) {
    var neg = s.charAt(0) === "-";
    if (neg) { s = s.slice(1); }
    var parts = s.split(".");
    var i = parts[0], out = "";
    while (i.length > 3) { out = "," + i.slice(-3) + out; i = i.slice(0, -3); }
    return (neg ? "-" : "") + i + out + (parts.length > 1 ? "." + parts[1] : "");
  }

  // round2 rounds a plain decimal string to two places, half away from
  // zero, with exactly two places (the server's decimal Round(2) and
  // StringFixed(2)), on digits only.
  function round2(s) {
    var neg = s.charAt(0) === "-";
    if (neg) { s = s.slice(1); }
    var parts = s.split(".");
    var frac = ((parts[1] || "") + "000");
    var digits = (parts[0] + frac.slice(0, 2)).split("").map(Number);
    if (Number(frac.charAt(2)) >= 5) {
      var k = digits.length - 1;
      while (k >= 0) {
        if (digits[k] === 9) { digits[k] = 0; k--; } else { digits[k]++; break; }
      }
      if (k < 0) { digits.unshift(1); }
    }
    var d = digits.join("");
    var ip = d.slice(0, -2).replace(/^0+(?=\d)/, "") || "0";
    var r = ip + "." + d.slice(-2);
    if (neg && /[1-9]/.test(r)) { r = "-" + r; }
    return r;
  }

  function format(kind, v) {
    switch (kind) {
      case "usd": return "$" + group(v);
      case "money": return "$" + group(round2(v));
      case "pct":
        var r = round2(v);
        if (r.charAt(0) !== "-" && /[1-9]/.test(r)) { r = "+" + r; }
        return r.replace("-", "\u2212") + " %";
      default: return group(v);
    }
  }

  function direction(kind, v) {
    if (kind !== "pct") { return ""; }
    var r = round2(v);
    if (!/[1-9]/.test(r)) { return ""; }
    return r.charAt(0) === "-" ? "down" : "up";
  }

  function apply(body) {
    var figs = document.querySelectorAll("data.fig[data-k]");
    for (var i = 0; i < figs.length; i++) {
      var el = figs[i], key = el.getAttribute("data-k");
      if (!(key in body)) { continue; }
      var v = body[key];
      var value = v === null || v === undefined ? "" : String(v);
      if (value === el.getAttribute("value")) { continue; }
      var kind = el.getAttribute("data-f");
      el.setAttribute("value", value);
      el.textContent = value === "" ? "\u2014" : format(kind, value);
      el.classList.remove("up", "down");
      var dir = value === "" ? "" : direction(kind, value);
      if (dir) { el.classList.add(dir); }
    }
    var up = document.getElementById("updated");
    if (up && body.updated_at) {
      up.setAttribute("datetime", body.updated_at);
      up.textContent = body.updated_at;
    }
    var stale = document.getElementById("stale");
    if (stale) { stale.hidden = !body.stale; }
  }

  function refresh() {
    fetch("/api/market", { headers: { "Accept": "application/json" }, cache: "no-cache" })
      .then(function (resp) { return resp.ok ? resp.text() : null; })
      .then(function (text) { if (text) { apply(parseExact(text)); } })
      .catch(function () { /* offline or the API unreachable: keep the figures shown */ });
  }

  function start() {
    if (timer === null) { timer = setInterval(refresh, PERIOD); }
  }

  function stop() {
    if (timer !== null) { clearInterval(timer); timer = null; }
  }

  function copy(ev) {
    var btn = ev.currentTarget, text = btn.getAttribute("data-copy");
    var live = document.getElementById("live");
    var done = function () {
      btn.textContent = "Copied";
      if (live) { live.textContent = "Copied " + text; }
      setTimeout(function () { btn.textContent = "Copy"; }, 2000);
    };
    if (navigator.clipboard && navigator.clipboard.writeText) {
      navigator.clipboard.writeText(text).then(done, function () { btn.textContent = "Select and copy"; });
    }
  }

  function init() {
    var buttons = document.querySelectorAll("button.copy[data-copy]");
    for (var i = 0; i < buttons.length; i++) {
      if (navigator.clipboard) {
        buttons[i].hidden = false;
        buttons[i].addEventListener("click", copy);
      }
    }
    if (!exactJSONSupported()) { return; }
    document.addEventListener("visibilitychange", function () {
      if (document.hidden) { stop(); } else { refresh(); start(); }
    });
    if (!document.hidden) { start(); }
  }

  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", init);
  } else {
    init();
  }
}());
