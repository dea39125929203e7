// The portal's one script (script-src 'self'; no eval, no inline code).
// The page is complete without it: while the tab is visible it updates the
// figures from the event stream /api/events (each market event carries the
// /api/market body, which holds every figure of the page), and falls back
// to reading /api/market every 30 seconds when the browser has no
// EventSource, when the stream fails for good (a 503 too_many_streams: the
// browser does not retry it), or when no market event came for 90 seconds
// (the market changes every minute; the stream's heartbeats are not
// visible to a script);
// it also makes the copy buttons work. Numbers stay exact: JSON numbers
// are read from their source text (JSON.parse's reviver context), never
// through a float; a browser that cannot do that keeps the figures the
// server rendered.
(function () {
  "use strict";
  var PERIOD = 30000;
  var QUIET = 90000;
  var STREAM = "/api/events";
  var timer = null;
  var stream = null;
  var lastEvent = 0; // when the last market event came (ms)

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

  // tick is the poll: skipped while the stream delivers market events.
  function tick() {
    if (Date.now() - lastEvent < QUIET) { return; }
    refresh();
  }

  function onMarket(ev) {
    lastEvent = Date.now();
    try {
      apply(parseExact(ev.data));
    } catch (e) { /* a body that does not parse: the poll's figures stay */ }
  }

  function openStream() {
    if (stream !== null || typeof window.EventSource !== "function") { return; }
    var es;
    try {
      es = new window.EventSource(STREAM);
    } catch (e) {
      return;
    }
    stream = es;
    es.addEventListener("market", onMarket);
    es.addEventListener("error", function () {
      // CONNECTING: the browser reconnects by itself with Last-Event-ID.
      // CLOSED: it gave up (an answer other than the stream); the poll
      // goes on, and the stream is tried again when the tab is shown.
      if (es.readyState === window.EventSource.CLOSED && stream === es) {
        stream = null;
        lastEvent = 0;
      }
    });
  }

  function closeStream() {
    if (stream !== null) { stream.close(); stream = null; }
    lastEvent = 0;
  }

  function start() {
    openStream();
    if (timer === null) { timer = setInterval(tick, PERIOD); }
  }

  function stop() {
    closeStream();
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
