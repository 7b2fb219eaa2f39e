// jobq dashboard: refreshes the overview's live part, asks before bulk actions. No framework:
// the pages work without it (a reload shows the same), it only saves the reloads.
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
    var question = event.target.getAttribute("data-confirm");
    if (question && !window.confirm(question)) { event.preventDefault(); }
  });
})();
