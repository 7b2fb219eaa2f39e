// jobq dashboard: refreshes the overview's live part and, when asked, the list pages; asks before
// bulk actions, and for the reason of a cancel. No framework: the pages work without it.
(function () {
  "use strict";
  var live = document.getElementById("live");
  if (live) {
    var every = Math.max(1, parseFloat(live.getAttribute("data-every") || "2")) * 1000;
    var src = live.getAttribute("data-src");
    var refresh = function () {
      fetch(src, { credentials: "same-origin", headers: { "Accept": "text/html" } })
        .then(function (r) { return r.ok ? r.text() : null; })
        .then(function (html) { if (html !== null) { live.innerHTML = html; } })
        .catch(function () {})
        .then(function () { setTimeout(refresh, every); });
    };
    setTimeout(refresh, every);
  }
  document.addEventListener("submit", function (event) {
    var form = event.target, button = event.submitter;
    var question = (button && button.getAttribute("data-confirm")) || form.getAttribute("data-confirm");
    if (question && !window.confirm(question)) { event.preventDefault(); return; }
    // A cancel of the selected jobs asks why, unless the reason field says it already.
    var ask = form.getAttribute("data-reason-prompt"), reason = form.elements.reason;
    if (ask && button && button.value === "cancel" && reason && !reason.value) {
      var given = window.prompt(ask, "");
      if (given === null) { event.preventDefault(); return; }
      reason.value = given;
    }
  });
  var all = document.getElementById("select-all");
  if (all) {
    all.addEventListener("change", function () {
      document.querySelectorAll("input.select").forEach(function (box) { box.checked = all.checked; });
    });
  }
  // List pages: reload every data-every seconds while the box is ticked (remembered per page),
  // unless a row is selected or a field has the focus.
  var auto = document.getElementById("auto-refresh");
  if (auto) {
    var key = "jobq-refresh:" + location.pathname;
    auto.checked = window.localStorage && localStorage.getItem(key) === "1";
    auto.addEventListener("change", function () {
      if (window.localStorage) { localStorage.setItem(key, auto.checked ? "1" : "0"); }
    });
    setInterval(function () {
      var busy = document.querySelector("input.select:checked") ||
        (document.activeElement && /INPUT|TEXTAREA|SELECT/.test(document.activeElement.tagName) &&
         document.activeElement !== auto);
      if (auto.checked && !busy) { location.reload(); }
    }, Math.max(1, parseFloat(auto.getAttribute("data-every") || "10")) * 1000);
  }
})();
